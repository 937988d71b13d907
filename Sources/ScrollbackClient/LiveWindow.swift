import Foundation
import ScrollbackModels
import ScrollbackTimeline

/// A conversation's window with its live subscription as a child, as a
/// parent reducer scopes a child one: the `Timeline` is the one owner of
/// completeness (which seqs it holds, what is missing, what to fetch, how
/// new what it holds is), and the `LiveProtocol`, in `.window` mode, owns
/// only the subscription (the socket, resuming, backoff, refusals) and asks
/// the timeline where to resume. `ConversationFeed` runs it; the timeline's
/// fetches stay its effects, the subscription's steps are the runner's.
enum LiveWindow {
    /// What an input of the socket makes of the timeline and the
    /// subscription: the actions the timeline applies, in order, and the
    /// steps the subscription takes.
    static func handle(_ input: LiveProtocol.Input, timeline: Timeline, live: inout LiveProtocol)
        -> (actions: [TimelineAction], steps: [LiveProtocol.Step])
    {
        // A new subscription resumes after the newest message held (in a
        // window detached from the live edge, after the newest known): the
        // socket replays what follows, so nothing it replays is fetched.
        if case .opened = input { live.resume(after: timeline.resumeAfter) }
        var actions: [TimelineAction] = []
        if case .received(let frame) = input, live.phase == .subscribing || live.phase == .live {
            switch frame {
            case .message(let message): actions.append(.liveMessage(message))
            case .messageUpdated(let message): actions.append(.messageUpdated(message))
            case .resyncRequired(_, let seq): actions.append(.resyncRequired(lastSeq: seq))
            default: break
            }
        }
        let steps = live.handle(input)
        for step in steps {
            switch step {
            case .emit(.connected(let seq, let version)):
                // The backlog after the resume point follows on the socket
                // (or `resync_required` does instead): only what comes after
                // it is the timeline's to find missing.
                actions.append(.subscribed(lastSeq: min(seq, live.lastSeq ?? seq), version: version))
            case .emit(.memberRemoved):
                actions.append(.memberRemoved)
            case .disconnect:
                // The socket is given up: what its next subscription replays
                // before `subscribed` is no proof that nothing was missed.
                actions.append(.unsubscribed)
            default:
                break
            }
        }
        return (actions, steps)
    }
}

import ArgumentParser

@main
struct Scrollback: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scrollback",
        abstract: "A chat message backend: conversations in PostgreSQL, history served newest first.",
        subcommands: [
            Serve.self, Migrate.self, Token.self, IdentityProvider.self, LayoutCommand.self, Chat.self, Webhooks.self,
            Outbox.self, Admin.self,
        ])
}

#!/usr/bin/env python3
"""A TCP proxy whose link can be cut: scripts/faults puts one between each
server instance and PostgreSQL.

    tcp-proxy.py LISTEN_PORT TARGET_PORT [PID_FILE]

Listens on 127.0.0.1:LISTEN_PORT and relays every connection to
127.0.0.1:TARGET_PORT. SIGUSR1 cuts the link the way a network partition
does: nothing passes in either direction (bytes wait, as TCP would hold
them) and new connections are accepted but go nowhere. SIGUSR2 heals it:
what waited is delivered and new connections reach the target again.
SIGTERM stops the proxy.
"""
import asyncio
import os
import signal
import sys


async def main() -> None:
    listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
    link = asyncio.Event()
    link.set()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, link.clear)
    loop.add_signal_handler(signal.SIGUSR2, link.set)
    stopped = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stopped.set)
    loop.add_signal_handler(signal.SIGINT, stopped.set)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await link.wait()
                data = await reader.read(65536)
                if not data:
                    break
                # A cut between reading and writing holds the bytes back too.
                await link.wait()
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def accept(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        await link.wait()
        try:
            target_reader, target_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, target_writer), pipe(target_reader, client_writer))

    server = await asyncio.start_server(accept, "127.0.0.1", listen_port)
    async with server:
        await stopped.wait()


if __name__ == "__main__":
    asyncio.run(main())

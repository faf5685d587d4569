"""What every test origin here shares: a threaded server on 127.0.0.1 that prints its port on
stdout and exits when its stdin closes (so it never outlives the test process that started
it), with SIGTERM and SIGINT unblocked (a parent on a thread with signals blocked passes that
mask on)."""

import os
import signal
import socket
import sys
import threading
from http.server import ThreadingHTTPServer


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog is 5: a gateway's prepare jobs and its players connecting
    # at once overflowed it, and a dropped SYN is retried after a whole second. A CDN's is large.
    request_queue_size = 128

    def get_request(self):
        # http.server writes a response's head and its body in two sends. With Nagle's
        # algorithm on, a small body waited for the client's delayed ACK of the head: 40 ms
        # on every small answer (a 1 kB object, a playlist), where a CDN (nginx's tcp_nodelay)
        # sends at once.
        sock, address = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, address

    def handle_error(self, request, client_address):
        pass  # clients that hang up mid-body are normal here


def exit_when_stdin_closes():
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


def serve(handler, port=None):
    """Serves `handler` on `port`; by default the port given as the first argument, else a
    free one."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    if port is None:
        port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = Server(("127.0.0.1", port), handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()

#!/usr/bin/env python3
"""A TCP relay: accepts on LISTEN_HOST:LISTEN_PORT and copies bytes both ways to TARGET_HOST:PORT.

    tcp_relay.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT

`make demo-install` (hack/demo.sh up-install) runs two of them so that the controller in its
network namespace reaches kube-apiserver, which listens on the host's 127.0.0.1 only: one inside
the namespace on 127.0.0.1:<apiserver port> (the kubeconfig's address, which the apiserver's
certificate names) to the host end of the namespace's veth pair, and one there to 127.0.0.1.
The traffic stays on the pair's TEST-NET-1 addresses. Runs until killed.

Its relay() is also the tunnel of test/kube/connect_proxy.py (HTTP CONNECT, TLS and SOCKS5
proxies for the kubeconfig tests).
"""
import select
import socket
import ssl
import sys
import threading


def relay(a, b):
    """Copies bytes both ways between the connected sockets a and b until both directions ended,
    then closes both. One thread serves both directions: a TLS socket (ssl.SSLSocket) must not be
    read and written by two threads at once."""
    peer = {a: b, b: a}
    reading = [a, b]
    try:
        while reading:
            # Bytes TLS already decrypted are not visible to select().
            ready = [s for s in reading if isinstance(s, ssl.SSLSocket) and s.pending()]
            if not ready:
                ready, _, _ = select.select(reading, [], [])
            for s in ready:
                data = s.recv(65536)
                if data:
                    peer[s].sendall(data)
                    continue
                reading.remove(s)
                if isinstance(peer[s], ssl.SSLSocket):
                    return  # TLS has no half-close: the tunnel ends with either direction
                # The other direction may still have bytes to deliver: close only this half.
                peer[s].shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        a.close()
        b.close()


def serve(conn, target):
    try:
        upstream = socket.create_connection(target)
    except OSError as e:
        print(f"tcp_relay: cannot reach {target[0]}:{target[1]}: {e}", file=sys.stderr)
        conn.close()
        return
    relay(conn, upstream)


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: tcp_relay.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT")
    listen = (sys.argv[1], int(sys.argv[2]))
    target = (sys.argv[3], int(sys.argv[4]))
    server = socket.create_server(listen, reuse_port=False)
    print(f"tcp_relay: {listen[0]}:{listen[1]} -> {target[0]}:{target[1]}", flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn, target), daemon=True).start()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A TCP relay: accepts on LISTEN_HOST:LISTEN_PORT and copies bytes both ways to TARGET_HOST:PORT.

    tcp_relay.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT

`make demo-install` (hack/demo.sh up-install) runs two of them so that the controller in its
network namespace reaches kube-apiserver, which listens on the host's 127.0.0.1 only: one inside
the namespace on 127.0.0.1:<apiserver port> (the kubeconfig's address, which the apiserver's
certificate names) to the host end of the namespace's veth pair, and one there to 127.0.0.1.
The traffic stays on the pair's TEST-NET-1 addresses. Runs until killed.
"""
import socket
import sys
import threading


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        # The other direction may still have bytes to deliver: close only this half.
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(conn, target):
    try:
        upstream = socket.create_connection(target)
    except OSError as e:
        print(f"tcp_relay: cannot reach {target[0]}:{target[1]}: {e}", file=sys.stderr)
        conn.close()
        return
    back = threading.Thread(target=pump, args=(upstream, conn), daemon=True)
    back.start()
    pump(conn, upstream)
    back.join()
    conn.close()
    upstream.close()


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

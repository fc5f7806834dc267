#!/usr/bin/env python3
"""A minimal proxy on 127.0.0.1 for kube_config_integration_test, in one of three kinds:

    connect_proxy.py                     HTTP CONNECT (an http:// proxy-url)
    connect_proxy.py --tls CERT KEY      HTTP CONNECT inside TLS with CERT (an https:// proxy-url)
    connect_proxy.py --socks5            SOCKS5, no authentication, CONNECT only (socks5://,
                                         socks5h://)

It prints "listening PORT", then "CONNECT host:port" for each tunnel it opens, with the host as
the client named it (a name for socks5h://, an address for socks5://), to stdout, flushed; and
relays bytes both ways (hack/tcp_relay.py's relay). It only tunnels to 127.0.0.1 and localhost.
"""
import ipaddress
import os
import socket
import ssl
import struct
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "hack"))
from tcp_relay import relay  # noqa: E402

ALLOWED = ("127.0.0.1", "localhost")


def read_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("client closed the connection")
        data += chunk
    return data


def http_connect(client):
    """The target of an HTTP CONNECT request, answered; None if refused."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = client.recv(4096)
        if not chunk:
            return None
        head += chunk
    parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    if len(parts) != 3 or parts[0] != "CONNECT":
        client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
        return None
    host, _, port = parts[1].rpartition(":")
    if host not in ALLOWED:
        client.sendall(b"HTTP/1.1 403 Forbidden\r\n\r\n")
        return None
    upstream = socket.create_connection(("127.0.0.1", int(port)))
    print("CONNECT " + parts[1], flush=True)
    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    return upstream


def socks5_reply(client, code):
    # VER, REP, RSV, ATYP=IPv4, BND.ADDR 0.0.0.0, BND.PORT 0 (RFC 1928 section 6)
    client.sendall(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))


def socks5_connect(client):
    """The target of a SOCKS5 CONNECT (RFC 1928), answered; None if refused."""
    version, count = read_exactly(client, 2)
    methods = read_exactly(client, count)
    if version != 5 or 0 not in methods:
        client.sendall(bytes([5, 0xFF]))  # no acceptable method: only "no authentication"
        return None
    client.sendall(bytes([5, 0]))
    version, command, _, kind = read_exactly(client, 4)
    if kind == 1:
        host = str(ipaddress.IPv4Address(read_exactly(client, 4)))
    elif kind == 3:
        host = read_exactly(client, read_exactly(client, 1)[0]).decode("latin-1")
    elif kind == 4:
        host = str(ipaddress.IPv6Address(read_exactly(client, 16)))
    else:
        socks5_reply(client, 8)  # address type not supported
        return None
    (port,) = struct.unpack("!H", read_exactly(client, 2))
    if version != 5 or command != 1:
        socks5_reply(client, 7)  # command not supported
        return None
    if host not in ALLOWED:
        socks5_reply(client, 2)  # not allowed by ruleset
        return None
    try:
        upstream = socket.create_connection(("127.0.0.1", port))
    except OSError:
        socks5_reply(client, 5)  # connection refused
        return None
    print("CONNECT %s:%d" % (host, port), flush=True)
    socks5_reply(client, 0)
    return upstream


def handle(client, tls, socks5):
    try:
        if tls is not None:
            client = tls.wrap_socket(client, server_side=True)
        upstream = socks5_connect(client) if socks5 else http_connect(client)
    except OSError as e:  # ssl.SSLError and ConnectionError too
        print("refused: %s" % e, flush=True)
        client.close()
        return
    if upstream is None:
        client.close()
        return
    relay(client, upstream)


def main():
    args = sys.argv[1:]
    tls = None
    socks5 = False
    if args[:1] == ["--tls"] and len(args) == 3:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args[1], args[2])
    elif args == ["--socks5"]:
        socks5 = True
    elif args:
        sys.exit("usage: connect_proxy.py [--tls CERT KEY | --socks5]")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    print("listening %d" % server.getsockname()[1], flush=True)
    while True:
        client, _ = server.accept()
        threading.Thread(target=handle, args=(client, tls, socks5), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())

"""Listeners and probes for NftFenceNamespaceIT, run with `ip netns exec <namespace> python3`.

serve NAME: answers NAME on TCP port 8080 (every address, IPv4 and IPv6) and echoes on UDP port
  5353; with a second argument ADDRESS:PORT, also answers "proxy" there. Runs until killed.
tcp SOURCE ADDRESS PORT SECONDS: connects (from SOURCE unless it is "-") and prints one line:
  "connected <first bytes>", "refused" (ECONNREFUSED: a TCP reset answered the SYN), "error <errno
  name>", or "timeout" (no answer at all within SECONDS).
udp SOURCE ADDRESS PORT SECONDS: sends one datagram and prints "answered <bytes>", "icmp type=T
  code=C" (the ICMP error that came back, read from the socket's error queue), "error <errno
  name>" or "timeout".
flood ADDRESS PORT COUNT: sends COUNT TCP SYNs from this namespace's address towards ADDRESS
  through a raw socket (no connection state, so no retries), and prints "sent COUNT in S seconds".
Every wait is bounded.
"""

import errno
import os
import socket
import struct
import sys
import threading
import time

IP_RECVERR = 11


def serve(name, proxy):
    def tcp(sock, answer):
        while True:
            conn, _ = sock.accept()
            try:
                conn.sendall(answer.encode())
            finally:
                conn.close()

    listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    listener.bind(("::", 8080))
    listener.listen(16)
    threading.Thread(target=tcp, args=(listener, name), daemon=True).start()
    if proxy:
        address, port = proxy.rsplit(":", 1)
        p = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        p.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        p.bind((address, int(port)))
        p.listen(16)
        threading.Thread(target=tcp, args=(p, "proxy"), daemon=True).start()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", 5353))
    print("serving", flush=True)
    while True:
        data, peer = udp.recvfrom(2048)
        udp.sendto(name.encode() + b" " + data, peer)


def family(address):
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def tcp_probe(source, address, port, seconds):
    s = socket.socket(family(address), socket.SOCK_STREAM)
    s.settimeout(seconds)
    try:
        if source != "-":
            s.bind((source, 0))
        s.connect((address, port))
        data = s.recv(64)
        return "connected " + data.decode(errors="replace")
    except socket.timeout:
        return "timeout"
    except ConnectionRefusedError:
        return "refused"
    except OSError as e:
        return "error " + errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()


def udp_probe(source, address, port, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_IP, IP_RECVERR, 1)
    s.settimeout(seconds)
    try:
        if source != "-":
            s.bind((source, 0))
        s.connect((address, port))
        s.send(b"ping")
        try:
            data = s.recv(2048)
            return "answered " + data.decode(errors="replace")
        except socket.timeout:
            return "timeout"
        except OSError as e:
            try:
                _, ancillary, _, _ = s.recvmsg(2048, 1024, socket.MSG_ERRQUEUE)
            except OSError:
                ancillary = []
            for level, kind, data in ancillary:
                if level == socket.SOL_IP and kind == IP_RECVERR and len(data) >= 8:
                    _, origin, icmp_type, icmp_code = struct.unpack("=IBBB", data[:7])
                    return "icmp type=%d code=%d" % (icmp_type, icmp_code)
            return "error " + errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def flood(address, port, count):
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect((address, port))
    source = probe.getsockname()[0]
    probe.close()
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    src, dst = socket.inet_aton(source), socket.inet_aton(address)
    start = time.monotonic()
    for i in range(count):
        sport = 20000 + i % 40000
        header = struct.pack("!HHIIBBHHH", sport, port, i, 0, 5 << 4, 0x02, 64240, 0, 0)
        pseudo = struct.pack("!4s4sBBH", src, dst, 0, socket.IPPROTO_TCP, len(header))
        header = header[:16] + struct.pack("!H", checksum(pseudo + header)) + header[18:]
        raw.sendto(header, (address, 0))
    took = time.monotonic() - start
    raw.close()
    return "sent %d in %.3f seconds" % (count, took)


def main(argv):
    mode = argv[1]
    if mode == "serve":
        serve(argv[2], argv[3] if len(argv) > 3 else None)
    elif mode == "tcp":
        print(tcp_probe(argv[2], argv[3], int(argv[4]), float(argv[5])), flush=True)
    elif mode == "udp":
        print(udp_probe(argv[2], argv[3], int(argv[4]), float(argv[5])), flush=True)
    elif mode == "flood":
        print(flood(argv[2], int(argv[3]), int(argv[4])), flush=True)
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main(sys.argv)

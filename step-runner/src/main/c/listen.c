/*
 * The runner's own end of a loopback stream, for a sandbox whose transport reaches it over TCP
 * (a Kubernetes pod, where the session relay beside it terminates TLS and relays to it): it
 * listens on a loopback address, takes exactly one connection, and closes its listener, so that
 * nothing that starts later (a step) can connect to it. See docs/step-runner.md, "Over loopback".
 */
#include "runner.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* "127.0.0.1:PORT" or "[::1]:PORT": a loopback address only, never the pod's own. */
static int parse(const char *spec, struct sockaddr_storage *out, socklen_t *len) {
  const char *colon = strrchr(spec, ':');
  if (colon == NULL || colon[1] == 0) return 0;
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (*end != 0 || port < 1 || port > 65535) return 0;
  char host[64];
  size_t host_len = (size_t)(colon - spec);
  if (host_len == 0 || host_len >= sizeof host) return 0;
  memcpy(host, spec, host_len);
  host[host_len] = 0;
  memset(out, 0, sizeof *out);
  if (host[0] == '[' && host[host_len - 1] == ']') {
    host[host_len - 1] = 0;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1 || !IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr)) {
      return 0;
    }
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    *len = sizeof *a6;
    return 1;
  }
  struct sockaddr_in *a4 = (struct sockaddr_in *)out;
  if (inet_pton(AF_INET, host, &a4->sin_addr) != 1 || (ntohl(a4->sin_addr.s_addr) >> 24) != 127) {
    return 0;
  }
  a4->sin_family = AF_INET;
  a4->sin_port = htons((uint16_t)port);
  *len = sizeof *a4;
  return 1;
}

int listen_spec_ok(const char *spec) {
  struct sockaddr_storage address;
  socklen_t len;
  return parse(spec, &address, &len);
}

int listen_once(const char *spec, int signal_fd) {
  struct sockaddr_storage address;
  socklen_t len;
  if (!parse(spec, &address, &len)) {
    fprintf(stderr, "asb-step-runner: --listen %s is not a loopback address and port\n", spec);
    exit(64);
  }
  int listener = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) {
    perror("asb-step-runner: socket");
    exit(71);
  }
  if (bind(listener, (struct sockaddr *)&address, len) != 0 || listen(listener, 1) != 0) {
    fprintf(stderr, "asb-step-runner: listening on %s: %s\n", spec, strerror(errno));
    exit(71);
  }
  fprintf(stderr, "asb-step-runner: waiting for the one connection on %s\n", spec);
  int stream = -1;
  while (stream < 0) {
    /* The kubelet's SIGTERM still stops a runner nobody connected to (runner.c, terminate_on). */
    struct pollfd fds[2] = {{.fd = listener, .events = POLLIN}, {.fd = signal_fd, .events = POLLIN}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) {
      perror("asb-step-runner: poll");
      exit(71);
    }
    if (fds[1].revents) {
      drain_signals(signal_fd);
    }
    if (fds[0].revents & POLLIN) {
      stream = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
      if (stream < 0 && errno != EINTR && errno != ECONNABORTED && errno != EAGAIN) {
        break;
      }
    }
  }
  if (stream < 0) {
    perror("asb-step-runner: accept");
    exit(71);
  }
  /* One connection, ever: whatever connects later finds nothing listening. */
  close(listener);
  int one = 1;
  /* Frames are small and answered at once: no Nagle delay on a step's round trip. */
  setsockopt(stream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return stream;
}

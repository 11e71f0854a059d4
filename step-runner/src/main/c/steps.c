/*
 * Steps: each a child in its own process group (and, in a VM, its own cgroup below the
 * workload's, so that a kill reaches everything it started, setsid or not), its standard input
 * fed from a buffer and its standard output and error read apart. When its first process exits,
 * whatever it left running is killed, its pipes are drained, and its exit is reported.
 */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DRAIN_MS 2000

int cgroup_fd = -1;
static char **base_env;

struct step {
  int used;
  uint32_t id;
  pid_t pid;
  int out, err, in;
  int cgroup;
  char cgroup_name[32];
  uint8_t *input;
  size_t input_len, input_off;
  int input_end;
  int exited, status, killed;
  long long drain_until;
  uint64_t opens_before;
};

static struct step steps[MAX_STEPS];

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void steps_init(char **env) { base_env = env; }

/*
 * The TCP connections this network namespace has opened so far (the kernel's ActiveOpens, counted
 * when a connect() sends its SYN, whether it then succeeds or not), or OPENS_UNKNOWN when
 * /proc/net/snmp cannot be read or parsed. The sandbox's only way out is a TCP connection to its
 * proxy, so a step during which it did not move made no connection the proxy could decide on.
 */
#define OPENS_UNKNOWN UINT64_MAX
static uint64_t tcp_active_opens(void) {
  char buf[4096];
  int fd = open("/proc/net/snmp", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OPENS_UNKNOWN;
  size_t len = 0;
  for (;;) {
    ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
    if (len == sizeof buf - 1) break;
  }
  close(fd);
  buf[len] = 0;
  /* Two "Tcp:" lines: the names, then the values, in the same order. */
  char *names = strstr(buf, "\nTcp: ");
  if (names == NULL) return OPENS_UNKNOWN;
  names += 6;
  char *values = strstr(names, "\nTcp: ");
  if (values == NULL) return OPENS_UNKNOWN;
  *values = 0;
  values += 6;
  int column = -1, i = 0;
  for (char *save = NULL, *name = strtok_r(names, " \n", &save); name != NULL;
       name = strtok_r(NULL, " \n", &save), i++) {
    if (strcmp(name, "ActiveOpens") == 0) {
      column = i;
      break;
    }
  }
  if (column < 0) return OPENS_UNKNOWN;
  i = 0;
  for (char *save = NULL, *value = strtok_r(values, " \n", &save); value != NULL;
       value = strtok_r(NULL, " \n", &save), i++) {
    if (i == column) {
      char *end;
      errno = 0;
      unsigned long long v = strtoull(value, &end, 10);
      if (errno != 0 || *end != 0 || end == value || value[0] == '-') return OPENS_UNKNOWN;
      return (uint64_t)v;
    }
  }
  return OPENS_UNKNOWN;
}

static struct step *find(uint32_t id) {
  for (int i = 0; i < MAX_STEPS; i++) {
    if (steps[i].used && steps[i].id == id) return &steps[i];
  }
  return NULL;
}

static void kill_group(struct step *s) {
  if (s->pid > 0) kill(-s->pid, SIGKILL);
  if (s->cgroup >= 0) {
    int fd = openat(s->cgroup, "cgroup.kill", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (write(fd, "1", 1) < 0) {
        /* The group may be gone already; the process group was signalled above. */
      }
      close(fd);
    }
  }
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* The step's environment: the runner's own (the session's), overlaid by the step's pairs. */
static char **step_env(char **pairs, int count) {
  int base = 0;
  while (base_env[base] != NULL) base++;
  char **env = calloc((size_t)base + (size_t)count + 1, sizeof(char *));
  if (env == NULL) _exit(4);
  int n = 0;
  for (int i = 0; i < base; i++) {
    const char *eq = strchr(base_env[i], '=');
    size_t key = eq == NULL ? strlen(base_env[i]) : (size_t)(eq - base_env[i]);
    int replaced = 0;
    for (int j = 0; j < count && !replaced; j++) {
      replaced = strncmp(pairs[j], base_env[i], key) == 0 && pairs[j][key] == '=';
    }
    if (!replaced) env[n++] = base_env[i];
  }
  for (int j = 0; j < count; j++) env[n++] = pairs[j];
  return env;
}

static void child_fail(const char *what, const char *name, int error) {
  char message[600];
  int len = snprintf(message, sizeof message, "asb-step-runner: %s %s: %s\n", what, name,
                     error == ENOENT ? "No such file or directory"
                     : error == EACCES ? "Permission denied"
                     : error == ENOEXEC ? "Exec format error"
                     : "cannot be run");
  if (len > 0 && write(2, message, (size_t)len) < 0) {
    /* Nothing else to tell: the exit status says it. */
  }
  _exit(error == ENOENT ? 127 : 126);
}

/* The child: only async-signal-safe calls from here to exec. */
static void child(char **argv, char **env, const char *path, int in, int out, int err, int cwd,
                  int procs) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  setpgid(0, 0);
  if (procs >= 0 && write(procs, "0", 1) != 1) child_fail("joining the step's cgroup for", argv[0], errno);
  int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {
    if (write(oom, "0", 1) < 0) {
      /* Raising it back is always allowed; if /proc is missing the step keeps the runner's. */
    }
    close(oom);
  }
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
  if (fchdir(cwd) != 0) child_fail("entering the folder for", argv[0], errno);
  syscall(SYS_close_range, 3, ~0U, 0);
  if (strchr(argv[0], '/') != NULL) {
    execve(argv[0], argv, env);
    child_fail("cannot execute", argv[0], errno);
  }
  int seen = ENOENT;
  char candidate[4096 + 256];
  const char *p = path;
  while (p != NULL && *p != 0) {
    const char *colon = strchr(p, ':');
    size_t len = colon == NULL ? strlen(p) : (size_t)(colon - p);
    size_t name = strlen(argv[0]);
    if (len + name + 2 <= sizeof candidate) {
      if (len == 0) {
        candidate[0] = '.';
        len = 1;
      } else {
        memcpy(candidate, p, len);
      }
      candidate[len] = '/';
      memcpy(candidate + len + 1, argv[0], name + 1);
      execve(candidate, argv, env);
      if (errno != ENOENT && errno != ENOTDIR) seen = errno;
    }
    p = colon == NULL ? NULL : colon + 1;
  }
  child_fail("cannot execute", argv[0], seen);
}

void op_exec(uint32_t id, struct reader *r) {
  uint32_t argc = get_u32(r);
  if (r->bad || argc == 0 || argc > 65536) {
    r->bad = 1;
    return;
  }
  char **argv = calloc(argc + 1, sizeof(char *));
  if (argv == NULL) _exit(4);
  for (uint32_t i = 0; i < argc && !r->bad; i++) argv[i] = get_str(r);
  uint32_t envc = get_u32(r);
  char **pairs = NULL;
  if (!r->bad && envc <= 65536) {
    pairs = calloc(envc + 1, sizeof(char *));
    if (pairs == NULL) _exit(4);
    for (uint32_t i = 0; i < envc && !r->bad; i++) {
      pairs[i] = get_str(r);
      if (pairs[i] != NULL && strchr(pairs[i], '=') == NULL) r->bad = 1;
    }
  } else {
    r->bad = 1;
  }
  struct path cwd = {0, NULL};
  if (!r->bad) get_path(r, &cwd);
  struct step *s = NULL;
  int cwd_fd = -1;
  int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
  int procs = -1;
  char **env = NULL;
  struct refusal why = {RS_BUSY, 0, 0};
  if (r->bad) goto done;
  for (int i = 0; i < MAX_STEPS && s == NULL; i++) {
    if (!steps[i].used) s = &steps[i];
  }
  if (s == NULL || find(id) != NULL) {
    send_refused(id, &why, "exec: 8 steps are running");
    s = NULL;
    goto done;
  }
  cwd_fd = open_folder(&cwd, cwd.count, 0, &why, NULL);
  if (cwd_fd < 0) {
    send_refused(id, &why, "exec: entering its folder");
    s = NULL;
    goto done;
  }
  *s = (struct step){.used = 1, .id = id, .out = -1, .err = -1, .in = -1, .cgroup = -1};
  for (int i = 0; i < 3; i++) {
    if (pipe2(pipes[i], O_CLOEXEC) != 0) {
      why = (struct refusal){RS_FAILED, errno, 0};
      send_refused(id, &why, "exec: pipe");
      s->used = 0;
      s = NULL;
      goto done;
    }
  }
  if (cgroup_fd >= 0) {
    snprintf(s->cgroup_name, sizeof s->cgroup_name, "step-%u", id);
    if (mkdirat(cgroup_fd, s->cgroup_name, 0755) != 0 && errno != EEXIST) {
      why = (struct refusal){RS_FAILED, errno, 0};
      send_refused(id, &why, "exec: creating the step's cgroup");
      s->used = 0;
      s = NULL;
      goto done;
    }
    s->cgroup = openat(cgroup_fd, s->cgroup_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    procs = s->cgroup < 0 ? -1 : openat(s->cgroup, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (procs < 0) {
      why = (struct refusal){RS_FAILED, errno, 0};
      send_refused(id, &why, "exec: opening the step's cgroup");
      close_fd(&s->cgroup);
      unlinkat(cgroup_fd, s->cgroup_name, AT_REMOVEDIR);
      s->used = 0;
      s = NULL;
      goto done;
    }
  }
  env = step_env(pairs, (int)envc);
  const char *path = NULL;
  for (int i = 0; env[i] != NULL; i++) {
    if (strncmp(env[i], "PATH=", 5) == 0) path = env[i] + 5;
  }
  if (path == NULL) path = "/usr/local/bin:/usr/bin:/bin";
  uint64_t opens_before = tcp_active_opens();
  pid_t pid = fork();
  if (pid == 0) child(argv, env, path, pipes[0][0], pipes[1][1], pipes[2][1], cwd_fd, procs);
  if (pid < 0) {
    int e = errno;
    why = (struct refusal){RS_FAILED, e, 0};
    send_refused(id, &why,
                 e == EAGAIN ? "exec: fork (the sandbox's process cap is reached?)" : "exec: fork");
    if (s->cgroup >= 0) {
      close_fd(&s->cgroup);
      unlinkat(cgroup_fd, s->cgroup_name, AT_REMOVEDIR);
    }
    s->used = 0;
    s = NULL;
    goto done;
  }
  setpgid(pid, pid);
  s->pid = pid;
  s->opens_before = opens_before;
  s->in = pipes[0][1];
  s->out = pipes[1][0];
  s->err = pipes[2][0];
  pipes[0][1] = pipes[1][0] = pipes[2][0] = -1;
  fcntl(s->in, F_SETFL, O_NONBLOCK);
  fcntl(s->out, F_SETFL, O_NONBLOCK);
  fcntl(s->err, F_SETFL, O_NONBLOCK);
  uint8_t b[4] = {(uint8_t)(pid >> 24), (uint8_t)(pid >> 16), (uint8_t)(pid >> 8), (uint8_t)pid};
  send_simple(R_STARTED, id, b, sizeof b);
done:
  for (int i = 0; i < 3; i++) {
    close_fd(&pipes[i][0]);
    close_fd(&pipes[i][1]);
  }
  close_fd(&procs);
  close_fd(&cwd_fd);
  free(env);
  for (uint32_t i = 0; i < argc; i++) free(argv[i]);
  free(argv);
  if (pairs != NULL) {
    for (uint32_t i = 0; i < envc; i++) free(pairs[i]);
    free(pairs);
  }
  free_path(&cwd);
}

void op_stdin(uint32_t id, struct reader *r, int end) {
  struct step *s = find(id);
  size_t len = r->len - r->pos;
  r->pos = r->len;
  /* Input for a step that was refused or already ended is dropped: the host sends ahead. */
  if (s == NULL || s->input_end) return;
  if (end) {
    s->input_end = 1;
    if (s->input_len == s->input_off) close_fd(&s->in);
    return;
  }
  if (s->in < 0) return;
  if (s->input_len - s->input_off + len > MAX_STDIN_BUFFER) fatal("more standard input than 4 MiB");
  if (s->input_off > 0) {
    memmove(s->input, s->input + s->input_off, s->input_len - s->input_off);
    s->input_len -= s->input_off;
    s->input_off = 0;
  }
  uint8_t *grown = realloc(s->input, s->input_len + len);
  if (grown == NULL) _exit(4);
  s->input = grown;
  memcpy(s->input + s->input_len, r->p + r->pos - len, len);
  s->input_len += len;
}

void op_kill(uint32_t id) {
  struct step *s = find(id);
  if (s == NULL || s->exited) return;
  s->killed = 1;
  kill_group(s);
}

static void finish(struct step *s) {
  uint32_t how = WIFSIGNALED(s->status) ? 1 : 0;
  uint32_t code = how ? (uint32_t)WTERMSIG(s->status) : (uint32_t)WEXITSTATUS(s->status);
  struct frame f;
  frame_start(&f);
  put_u32(&f, how);
  put_u32(&f, code);
  put_u32(&f, (uint32_t)s->killed);
  /* Connections opened while it ran (by anything in the sandbox), or unknown. */
  uint64_t opens_after = tcp_active_opens();
  put_u64(&f, s->opens_before == OPENS_UNKNOWN || opens_after == OPENS_UNKNOWN ||
                      opens_after < s->opens_before
                  ? OPENS_UNKNOWN
                  : opens_after - s->opens_before);
  send_frame(&f, R_EXITED, s->id);
  close_fd(&s->out);
  close_fd(&s->err);
  close_fd(&s->in);
  free(s->input);
  if (s->cgroup >= 0) {
    close_fd(&s->cgroup);
    /* Empty once its processes are gone; a straggler leaves an empty cgroup, nothing more. */
    unlinkat(cgroup_fd, s->cgroup_name, AT_REMOVEDIR);
  }
  *s = (struct step){0};
}

int steps_poll_fds(struct pollfd *fds, int max, int *deadline_ms) {
  int n = 0;
  long long now = now_ms();
  for (int i = 0; i < MAX_STEPS && n + 3 <= max; i++) {
    struct step *s = &steps[i];
    if (!s->used) continue;
    if (s->exited) {
      long long left = s->drain_until - now;
      int ms = left < 0 ? 0 : (int)left;
      if (*deadline_ms < 0 || ms < *deadline_ms) *deadline_ms = ms;
    }
    fds[n++] = (struct pollfd){.fd = s->out, .events = POLLIN};
    fds[n++] = (struct pollfd){.fd = s->err, .events = POLLIN};
    int wants_in = s->in >= 0 && s->input_len > s->input_off;
    fds[n++] = (struct pollfd){.fd = wants_in ? s->in : -1, .events = POLLOUT};
  }
  return n;
}

static void drain(struct step *s, int *fd, uint8_t type) {
  static uint8_t buffer[CHUNK];
  ssize_t n = read(*fd, buffer, sizeof buffer);
  if (n > 0) {
    send_simple(type, s->id, buffer, (size_t)n);
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    close_fd(fd);
  }
}

void steps_after_poll(struct pollfd *fds, int count) {
  int n = 0;
  long long now = now_ms();
  for (int i = 0; i < MAX_STEPS && n < count; i++) {
    struct step *s = &steps[i];
    if (!s->used) continue;
    struct pollfd *out = &fds[n], *err = &fds[n + 1], *in = &fds[n + 2];
    n += 3;
    /* One read per stream per round: a flooding step gets its turn, and no more. */
    if (s->out >= 0 && out->fd == s->out && out->revents) drain(s, &s->out, R_STDOUT);
    if (s->err >= 0 && err->fd == s->err && err->revents) drain(s, &s->err, R_STDERR);
    if (s->in >= 0 && in->fd == s->in && in->revents) {
      ssize_t w = write(s->in, s->input + s->input_off, s->input_len - s->input_off);
      if (w > 0) {
        s->input_off += (size_t)w;
      } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
        /* The step closed its input (EPIPE): what it did not read is dropped. */
        close_fd(&s->in);
        s->input_off = s->input_len;
      }
      if (s->in >= 0 && s->input_end && s->input_off == s->input_len) close_fd(&s->in);
    }
    if (s->exited && ((s->out < 0 && s->err < 0) || now >= s->drain_until)) finish(s);
  }
}

void steps_reap(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    /* As the subreaper, orphans of any step end up here too: reaped and forgotten. */
    for (int i = 0; i < MAX_STEPS; i++) {
      struct step *s = &steps[i];
      if (s->used && s->pid == pid && !s->exited) {
        s->exited = 1;
        s->status = status;
        kill_group(s);
        s->drain_until = now_ms() + DRAIN_MS;
        close_fd(&s->in);
        if (s->out < 0 && s->err < 0) finish(s);
      }
    }
  }
}

void steps_kill_all(void) {
  for (int i = 0; i < MAX_STEPS; i++) {
    if (steps[i].used && !steps[i].exited) kill_group(&steps[i]);
  }
}

/*
 * Paths below the workspace, resolved one segment at a time from the workspace's fd, never
 * following a symbolic link (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS first where the
 * kernel has it; the per-segment walk decides every refusal), and the file operations on them:
 * stat, list, mkdir and put (written beside, then renamed over).
 */
#include "runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int kind_of(mode_t mode) {
  if (S_ISREG(mode)) return K_FILE;
  if (S_ISDIR(mode)) return K_FOLDER;
  if (S_ISLNK(mode)) return K_SYMLINK;
  return K_OTHER;
}

int reason_of(int dirfd, const char *name, int error) {
  struct stat st;
  switch (error) {
    case ENOENT: return RS_NOT_FOUND;
    case ELOOP: return RS_SYMLINK;
    case EACCES:
    case EPERM: return RS_PERMISSION;
    case ENOTDIR:
    case EISDIR:
      /* O_DIRECTORY | O_NOFOLLOW on a link says ENOTDIR: look at what is there, not following. */
      if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return RS_NOT_FOUND;
      if (S_ISLNK(st.st_mode)) return RS_SYMLINK;
      if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return RS_WRONG_KIND;
      return RS_NOT_REGULAR;
    default: return RS_FAILED;
  }
}

/*
 * Opens the folder name in dirfd without following a link, even where O_DIRECTORY | O_NOFOLLOW
 * follows one (gVisor's runsc on this project's host follows a final link when O_DIRECTORY is
 * given; DockerSessionIT found it): the open itself carries no O_DIRECTORY, so a link is refused
 * with ELOOP on every kernel, and the fd opened is then checked to be a folder (ENOTDIR if not).
 * O_NONBLOCK: a fifo never blocks the open.
 */
int open_dir_nofollow(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  int e = 0;
  if (fstat(fd, &st) != 0) {
    e = errno;
  } else if (!S_ISDIR(st.st_mode)) {
    e = ENOTDIR;
  }
  if (e != 0) {
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

static int open_beneath(const struct path *p, int count) {
  char joined[8192];
  size_t at = 0;
  for (int i = 0; i < count; i++) {
    size_t len = strlen(p->segments[i]);
    if (at + len + 2 > sizeof joined) return -1;
    if (i > 0) joined[at++] = '/';
    memcpy(joined + at, p->segments[i], len);
    at += len;
  }
  if (count == 0) joined[at++] = '.';
  joined[at] = 0;
  struct open_how how = {
      .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
      .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
  long fd = syscall(SYS_openat2, workspace_fd, joined, &how, sizeof how);
  if (fd < 0 && errno == ENOSYS) use_openat2 = 0;
  return (int)fd;
}

/*
 * Opens the folder made of the first count segments of p, beneath the workspace, refusing any
 * segment that is a link. With create, missing folders are made (0755) on the way, each one
 * opened with O_NOFOLLOW right after, so a link swapped in between is refused, never followed.
 */
int open_folder(const struct path *p, int count, int create, struct refusal *why, int *created) {
  if (!create && use_openat2) {
    int fd = open_beneath(p, count);
    if (fd >= 0) return fd;
    /* Fall through: the walk below names the segment and the reason, or finds it fine now. */
  }
  int fd = openat(workspace_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    *why = (struct refusal){RS_FAILED, errno, 0};
    return -1;
  }
  for (int i = 0; i < count; i++) {
    const char *name = p->segments[i];
    int next = open_dir_nofollow(fd, name);
    if (next < 0 && errno == ENOENT && create) {
      if (mkdirat(fd, name, 0755) == 0) {
        if (created != NULL) (*created)++;
      } else if (errno != EEXIST) {
        int e = errno;
        *why = (struct refusal){e == ENOENT ? RS_NOT_FOUND : reason_of(fd, name, e), e, i};
        close(fd);
        return -1;
      }
      next = open_dir_nofollow(fd, name);
    }
    if (next < 0) {
      int e = errno;
      *why = (struct refusal){reason_of(fd, name, e), e, i};
      close(fd);
      return -1;
    }
    close(fd);
    fd = next;
  }
  return fd;
}

void put_info(struct frame *f, const char *name, const struct stat *st) {
  put_u32(f, (uint32_t)kind_of(st->st_mode));
  put_u64(f, S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0);
  put_u32(f, (uint32_t)(st->st_mode & 07777));
  put_u64(f, (uint64_t)st->st_mtim.tv_sec);
  put_u32(f, (uint32_t)st->st_mtim.tv_nsec);
  put_str(f, name);
}

static void send_info(uint32_t id, const char *name, const struct stat *st) {
  struct frame *f = malloc(sizeof *f);
  if (f == NULL) _exit(4);
  frame_start(f);
  put_info(f, name, st);
  send_frame(f, R_INFO, id);
  free(f);
}

void op_stat(uint32_t id, struct reader *r) {
  struct path p;
  if (!get_path(r, &p)) return;
  struct refusal why;
  struct stat st;
  if (p.count == 0) {
    if (fstat(workspace_fd, &st) != 0) {
      why = (struct refusal){RS_FAILED, errno, 0};
      send_refused(id, &why, "stat");
    } else {
      send_info(id, "", &st);
      send_end_u64(id, 0);
    }
    free_path(&p);
    return;
  }
  int dir = open_folder(&p, p.count - 1, 0, &why, NULL);
  if (dir < 0) {
    send_refused(id, &why, "stat");
  } else if (fstatat(dir, p.segments[p.count - 1], &st, AT_SYMLINK_NOFOLLOW) != 0) {
    int e = errno;
    why = (struct refusal){reason_of(dir, p.segments[p.count - 1], e), e, p.count - 1};
    send_refused(id, &why, "stat");
  } else {
    send_info(id, "", &st);
    send_end_u64(id, 0);
  }
  if (dir >= 0) close(dir);
  free_path(&p);
}

struct entry {
  char *name;
  struct stat st;
};

static int by_name(const void *a, const void *b) {
  return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

void op_list(uint32_t id, struct reader *r) {
  struct path p;
  if (!get_path(r, &p)) return;
  uint32_t max = get_u32(r);
  if (r->bad) {
    free_path(&p);
    return;
  }
  if (max > MAX_LIST) max = MAX_LIST;
  struct refusal why;
  int fd = open_folder(&p, p.count, 0, &why, NULL);
  free_path(&p);
  if (fd < 0) {
    send_refused(id, &why, "list");
    return;
  }
  DIR *dir = fdopendir(fd);
  if (dir == NULL) {
    why = (struct refusal){RS_FAILED, errno, 0};
    close(fd);
    send_refused(id, &why, "list");
    return;
  }
  size_t count = 0, cap = 64;
  struct entry *entries = malloc(cap * sizeof *entries);
  struct dirent *d;
  uint64_t total = 0;
  while (entries != NULL && (d = readdir(dir)) != NULL) {
    if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
    total++;
    struct entry e;
    if (fstatat(dirfd(dir), d->d_name, &e.st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    /* Keep at most max + 1 of the smallest names: the folder may hold many more. */
    if (count == cap) {
      if (count > max) {
        qsort(entries, count, sizeof *entries, by_name);
        for (size_t i = max + 1; i < count; i++) free(entries[i].name);
        count = max + 1;
      }
      if (count == cap) {
        cap *= 2;
        entries = realloc(entries, cap * sizeof *entries);
        if (entries == NULL) break;
      }
    }
    e.name = strdup(d->d_name);
    entries[count++] = e;
  }
  if (entries == NULL) _exit(4);
  qsort(entries, count, sizeof *entries, by_name);
  for (size_t i = 0; i < count; i++) {
    if (i < max) send_info(id, entries[i].name, &entries[i].st);
    free(entries[i].name);
  }
  free(entries);
  closedir(dir);
  send_end_u64(id, total > max ? 1 : 0);
}

void op_mkdir(uint32_t id, struct reader *r) {
  struct path p;
  if (!get_path(r, &p)) return;
  struct refusal why;
  int created = 0;
  int fd = open_folder(&p, p.count, 1, &why, &created);
  free_path(&p);
  if (fd < 0) {
    send_refused(id, &why, "mkdir");
    return;
  }
  close(fd);
  send_end_u64(id, (uint64_t)created);
}

/* Puts in progress: each a file written beside its target, renamed over it at the end. */
struct put {
  int used;
  uint32_t id;
  int failed;
  int dir;
  int fd;
  char *name;
  char temp[64];
  int last;
  uint64_t bytes;
};
static struct put puts_[MAX_TRANSFERS];
static unsigned put_counter;

static struct put *find_put(uint32_t id) {
  for (int i = 0; i < MAX_TRANSFERS; i++) {
    if (puts_[i].used && puts_[i].id == id) return &puts_[i];
  }
  return NULL;
}

static void put_fail(struct put *u, const struct refusal *why, const char *what) {
  send_refused(u->id, why, what);
  u->failed = 1;
  if (u->fd >= 0) {
    close(u->fd);
    unlinkat(u->dir, u->temp, 0);
    u->fd = -1;
  }
}

/* What is at the target now, if it is something a file must not replace. */
static int target_problem(struct put *u, struct refusal *why, int segment) {
  struct stat st;
  if (fstatat(u->dir, u->name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  if (S_ISLNK(st.st_mode)) *why = (struct refusal){RS_SYMLINK, 0, segment};
  else if (S_ISDIR(st.st_mode)) *why = (struct refusal){RS_WRONG_KIND, 0, segment};
  else if (!S_ISREG(st.st_mode)) *why = (struct refusal){RS_NOT_REGULAR, 0, segment};
  else return 0;
  return 1;
}

void op_put(uint32_t id, struct reader *r) {
  struct path p;
  if (!get_path(r, &p)) return;
  struct put *u = NULL;
  for (int i = 0; i < MAX_TRANSFERS && u == NULL; i++) {
    if (!puts_[i].used) u = &puts_[i];
  }
  struct refusal why = {RS_BUSY, 0, 0};
  if (u == NULL || find_put(id) != NULL || p.count == 0) {
    if (p.count == 0) why.reason = RS_WRONG_KIND;
    send_refused(id, &why, u == NULL ? "put: too many at once" : "put");
    free_path(&p);
    return;
  }
  *u = (struct put){.used = 1, .id = id, .dir = -1, .fd = -1};
  u->name = strdup(p.segments[p.count - 1]);
  u->dir = open_folder(&p, p.count - 1, 1, &why, NULL);
  int last = p.count - 1;
  u->last = last;
  free_path(&p);
  if (u->dir < 0) {
    put_fail(u, &why, "put");
    return;
  }
  if (target_problem(u, &why, last)) {
    put_fail(u, &why, "put");
    return;
  }
  snprintf(u->temp, sizeof u->temp, ".asb-put-%u-%u-%d", id, put_counter++, (int)getpid());
  u->fd = openat(u->dir, u->temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (u->fd < 0 || fchmod(u->fd, 0644) != 0) {
    int e = errno;
    /* ENOENT: the folder was removed under the put (it holds an fd, not a path). */
    why = (struct refusal){e == EACCES || e == EPERM ? RS_PERMISSION
                           : e == ENOENT              ? RS_NOT_FOUND
                                                      : RS_FAILED,
                           e, last};
    if (u->fd >= 0) {
      close(u->fd);
      unlinkat(u->dir, u->temp, 0);
      u->fd = -1;
    }
    put_fail(u, &why, "put");
  }
}

void op_put_data(uint32_t id, struct reader *r) {
  struct put *u = find_put(id);
  if (u == NULL || u->failed) return;
  const uint8_t *p = r->p + r->pos;
  size_t len = r->len - r->pos;
  r->pos = r->len;
  while (len > 0) {
    ssize_t n = write(u->fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      struct refusal why = {RS_FAILED, errno, 0};
      put_fail(u, &why, "put: writing");
      return;
    }
    p += n;
    len -= (size_t)n;
    u->bytes += (uint64_t)n;
  }
}

void op_put_end(uint32_t id, struct reader *r) {
  uint32_t commit = get_u32(r);
  struct put *u = find_put(id);
  if (u == NULL || r->bad) return;
  if (!u->failed) {
    struct refusal why;
    if (!commit) {
      close(u->fd);
      unlinkat(u->dir, u->temp, 0);
      u->fd = -1;
      why = (struct refusal){RS_FAILED, 0, 0};
      send_refused(id, &why, "put: abandoned by the host");
    } else if (close(u->fd) != 0) {
      u->fd = -1;
      why = (struct refusal){RS_FAILED, errno, 0};
      put_fail(u, &why, "put: closing");
    } else if ((u->fd = -1, target_problem(u, &why, u->last))) {
      unlinkat(u->dir, u->temp, 0);
      send_refused(id, &why, "put");
    } else if (renameat(u->dir, u->temp, u->dir, u->name) != 0) {
      int e = errno;
      why = (struct refusal){e == EISDIR || e == ENOTEMPTY ? RS_WRONG_KIND
                             : e == ENOENT                 ? RS_NOT_FOUND
                                                           : RS_FAILED,
                             e, u->last};
      unlinkat(u->dir, u->temp, 0);
      send_refused(id, &why, "put: renaming into place");
    } else {
      send_end_u64(id, u->bytes);
    }
  }
  if (u->dir >= 0) close(u->dir);
  free(u->name);
  *u = (struct put){0};
}

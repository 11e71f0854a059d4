/*
 * Reads of one file and walks of a folder, each on its own thread so that a slow reader on the
 * host never holds up the steps' output. Each sends only as many content bytes as the host has
 * granted (CREDIT frames), so the host buffers at most what it asked for.
 */
#include "runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REL_MAX 4096
/* What a frame costs against the host's credit beyond its payload (Transfer.FRAME_COST). */
#define FRAME_COST 64

struct transfer {
  int used;
  uint32_t id;
  int walk;
  struct path path;
  uint64_t max;
  uint64_t credit;
  int cancelled;
  pthread_cond_t more;
  uint64_t sent;
  struct frame frame;
  char rel[REL_MAX + MAX_SEGMENT_BYTES + 2];
};

static struct transfer transfers[MAX_TRANSFERS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Waits until the host's credit covers a frame of this payload; 0 once cancelled. */
static int take_credit(struct transfer *t, size_t payload) {
  uint64_t cost = (uint64_t)payload + FRAME_COST;
  pthread_mutex_lock(&lock);
  while (t->credit < cost && !t->cancelled) pthread_cond_wait(&t->more, &lock);
  int ok = !t->cancelled;
  if (ok) t->credit -= cost;
  pthread_mutex_unlock(&lock);
  return ok;
}

/* Sends exactly size bytes of fd (zeros if it shrank meanwhile); 0 once cancelled. */
static int send_content(struct transfer *t, int fd, uint64_t size) {
  uint64_t left = size;
  while (left > 0) {
    size_t n = left < MAX_PAYLOAD ? (size_t)left : MAX_PAYLOAD;
    if (!take_credit(t, n)) return 0;
    frame_start(&t->frame);
    uint8_t *p = t->frame.bytes + HEADER_BYTES;
    size_t got = 0;
    while (got < n) {
      ssize_t r = read(fd, p + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        memset(p + got, 0, n - got);
        got = n;
        break;
      }
      got += (size_t)r;
    }
    t->frame.len += n;
    send_frame(&t->frame, R_DATA, t->id);
    left -= n;
  }
  return 1;
}

static void refuse(struct transfer *t, int reason, int error, const char *what) {
  struct refusal why = {reason, error, 0};
  send_refused(t->id, &why, what);
}

static void read_file(struct transfer *t) {
  struct path *p = &t->path;
  struct refusal why;
  if (p->count == 0) {
    refuse(t, RS_WRONG_KIND, 0, "read: the workspace is a folder");
    return;
  }
  int dir = open_folder(p, p->count - 1, 0, &why, NULL);
  if (dir < 0) {
    send_refused(t->id, &why, "read");
    return;
  }
  const char *name = p->segments[p->count - 1];
  /* O_NONBLOCK: opening a fifo must not wait for a writer. */
  int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    why = (struct refusal){reason_of(dir, name, e), e, p->count - 1};
    close(dir);
    send_refused(t->id, &why, "read");
    return;
  }
  close(dir);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    refuse(t, RS_FAILED, errno, "read");
  } else if (S_ISDIR(st.st_mode)) {
    refuse(t, RS_WRONG_KIND, 0, "read: a folder");
  } else if (!S_ISREG(st.st_mode)) {
    refuse(t, RS_NOT_REGULAR, 0, "read: not a regular file");
  } else if ((uint64_t)st.st_size > t->max) {
    refuse(t, RS_TOO_LARGE, 0, "read: larger than the cap");
  } else {
    fcntl(fd, F_SETFL, 0);
    uint64_t size = (uint64_t)st.st_size;
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(size >> (56 - 8 * i));
    send_simple(R_SIZE, t->id, b, sizeof b);
    if (send_content(t, fd, size)) {
      send_end_u64(t->id, size);
    } else {
      refuse(t, RS_FAILED, 0, "read: cancelled by the host");
    }
  }
  close(fd);
}

/* Adds up the apparent sizes of the regular files below dirfd (links never followed). */
static uint64_t folder_bytes(int dirfd, int depth) {
  if (dirfd < 0) return 0;
  if (depth > MAX_DEPTH) {
    close(dirfd);
    return 0;
  }
  DIR *dir = fdopendir(dirfd);
  if (dir == NULL) {
    close(dirfd);
    return 0;
  }
  uint64_t total = 0;
  struct dirent *d;
  while ((d = readdir(dir)) != NULL) {
    if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
    struct stat st;
    if (fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode)) {
      total += (uint64_t)st.st_size;
    } else if (S_ISDIR(st.st_mode)) {
      int child = open_dir_nofollow(dirfd, d->d_name);
      if (child >= 0) total += folder_bytes(child, depth + 1);
    }
  }
  closedir(dir);
  return total;
}

/* An INFO or SKIPPED frame for the entry at rel; 0 once cancelled. */
static int send_entry(struct transfer *t, uint8_t type, const struct stat *st) {
  frame_start(&t->frame);
  if (type == R_INFO) {
    put_info(&t->frame, t->rel, st);
  } else {
    put_str(&t->frame, t->rel);
  }
  if (!take_credit(t, t->frame.len - HEADER_BYTES)) return 0;
  send_frame(&t->frame, type, t->id);
  return 1;
}

/*
 * Streams the entries below dirfd; rel holds their folder's path (length at). 1 to go on; 0 when
 * cancelled with nothing said yet; -1 when it already ended with a refusal.
 */
static int walk_folder(struct transfer *t, int dirfd, size_t at, int depth) {
  DIR *dir = fdopendir(dirfd);
  if (dir == NULL) {
    close(dirfd);
    return 1;
  }
  int going = 1;
  struct dirent *d;
  while (going == 1 && (d = readdir(dir)) != NULL) {
    if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
    size_t len = strlen(d->d_name);
    if (at + len + 1 > REL_MAX) continue;
    size_t end = at;
    if (at > 0) t->rel[end++] = '/';
    memcpy(t->rel + end, d->d_name, len + 1);
    end += len;
    struct stat st;
    if (fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH) {
      int child = open_dir_nofollow(dirfd, d->d_name);
      if (child < 0 || fstat(child, &st) != 0) {
        if (child >= 0) close(child);
        if (!send_entry(t, R_SKIPPED, NULL)) going = 0;
        continue;
      }
      if (!send_entry(t, R_INFO, &st)) {
        close(child);
        going = 0;
        continue;
      }
      going = walk_folder(t, child, end, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      int fd = openat(dirfd, d->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        if (!send_entry(t, R_SKIPPED, NULL)) going = 0;
        continue;
      }
      if (t->sent + (uint64_t)st.st_size > t->max) {
        close(fd);
        refuse(t, RS_TOO_LARGE, 0, "walk: the folder grew past the cap while it was read");
        going = -1;
        break;
      }
      fcntl(fd, F_SETFL, 0);
      going = send_entry(t, R_INFO, &st) && send_content(t, fd, (uint64_t)st.st_size);
      t->sent += (uint64_t)st.st_size;
      close(fd);
      if (!going) {
        refuse(t, RS_FAILED, 0, "walk: cancelled by the host");
        going = -1;
      }
    } else if (!send_entry(t, R_SKIPPED, NULL)) {
      going = 0;
    }
    t->rel[at] = 0;
  }
  closedir(dir);
  return going;
}

static void walk(struct transfer *t) {
  struct refusal why;
  int fd = open_folder(&t->path, t->path.count, 0, &why, NULL);
  if (fd < 0) {
    send_refused(t->id, &why, "walk");
    return;
  }
  /* A second open, not dup: a dup would share the folder's read offset with the walk below. */
  uint64_t total = folder_bytes(openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), 0);
  if (total > t->max) {
    close(fd);
    refuse(t, RS_TOO_LARGE, 0, "walk: the folder's files add up to more than the cap");
    return;
  }
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(total >> (56 - 8 * i));
  send_simple(R_SIZE, t->id, b, sizeof b);
  t->rel[0] = 0;
  t->sent = 0;
  int going = walk_folder(t, fd, 0, 0);
  if (going == 1) send_end_u64(t->id, t->sent);
  else if (going == 0) refuse(t, RS_FAILED, 0, "walk: cancelled by the host");
}

static void *run(void *arg) {
  struct transfer *t = arg;
  if (t->walk) walk(t);
  else read_file(t);
  pthread_mutex_lock(&lock);
  free_path(&t->path);
  pthread_cond_destroy(&t->more);
  t->used = 0;
  pthread_mutex_unlock(&lock);
  return NULL;
}

void op_transfer(uint32_t id, int walk_folder_, struct reader *r) {
  struct path p;
  if (!get_path(r, &p)) return;
  uint64_t max = get_u64(r);
  uint32_t credit = get_u32(r);
  if (r->bad) {
    free_path(&p);
    return;
  }
  pthread_mutex_lock(&lock);
  struct transfer *t = NULL;
  for (int i = 0; i < MAX_TRANSFERS; i++) {
    if (transfers[i].used && transfers[i].id == id) {
      t = NULL;
      break;
    }
    if (!transfers[i].used && t == NULL) t = &transfers[i];
  }
  if (t != NULL) {
    t->used = 1;
    t->id = id;
    t->walk = walk_folder_;
    t->path = p;
    t->max = max;
    t->credit = credit;
    t->cancelled = 0;
    pthread_cond_init(&t->more, NULL);
  }
  pthread_mutex_unlock(&lock);
  if (t == NULL) {
    struct refusal why = {RS_BUSY, 0, 0};
    send_refused(id, &why, "read: too many transfers at once");
    free_path(&p);
    return;
  }
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 1 << 20);
  if (pthread_create(&thread, &attr, run, t) != 0) {
    struct refusal why = {RS_BUSY, errno, 0};
    pthread_mutex_lock(&lock);
    free_path(&t->path);
    t->used = 0;
    pthread_mutex_unlock(&lock);
    send_refused(id, &why, "read: no thread");
  }
  pthread_attr_destroy(&attr);
}

static struct transfer *find(uint32_t id) {
  for (int i = 0; i < MAX_TRANSFERS; i++) {
    if (transfers[i].used && transfers[i].id == id) return &transfers[i];
  }
  return NULL;
}

void op_credit(uint32_t id, struct reader *r) {
  uint32_t more = get_u32(r);
  if (r->bad) return;
  pthread_mutex_lock(&lock);
  struct transfer *t = find(id);
  /* Credit for a transfer that already ended is normal: the host grants ahead. */
  if (t != NULL) {
    t->credit += more;
    pthread_cond_signal(&t->more);
  }
  pthread_mutex_unlock(&lock);
}

void op_cancel(uint32_t id) {
  pthread_mutex_lock(&lock);
  struct transfer *t = find(id);
  if (t != NULL) {
    t->cancelled = 1;
    pthread_cond_signal(&t->more);
  }
  pthread_mutex_unlock(&lock);
}

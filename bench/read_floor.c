/* The floor under any daemon that reads the files fabricmon reads, as often
 * as it reads them: one thread, every file opened once, woken by a periodic
 * timerfd every FAST_US microseconds to pread each file of FAST_LIST, and on
 * every SLOW_EVERY-th wake-up each file of SLOW_LIST too. No parsing, no
 * metrics, no allocation: what is left is the wake-ups and the reads.
 * bench/quiet_daemon.sh runs it side by side with fabricmon on the same tree
 * (FAST_LIST: the congestion collector's files every 100 ms; SLOW_LIST: the
 * 1 s collectors' files), so the daemon's CPU can be read as this floor plus
 * what is ours.
 *
 * Usage: read_floor SECONDS FAST_US FAST_LIST SLOW_EVERY SLOW_LIST
 * (lists: one path a line). Prints the files it keeps open, then runs for
 * SECONDS and exits. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* Opens every path listed in FILE (one a line) into fds; returns the count,
 * or -1 when the list or one of its files cannot be opened. */
static int OpenList(const char* list, int* fds, int max) {
  FILE* f = fopen(list, "r");
  if (f == NULL) {
    perror(list);
    return -1;
  }
  char path[4096];
  int n = 0;
  while (n < max && fgets(path, sizeof path, f) != NULL) {
    path[strcspn(path, "\n")] = '\0';
    if (path[0] == '\0') continue;
    fds[n] = open(path, O_RDONLY | O_CLOEXEC);
    if (fds[n] < 0) {
      perror(path);
      fclose(f);
      return -1;
    }
    n++;
  }
  fclose(f);
  return n;
}

static void ReadAll(const int* fds, int n) {
  char buf[4096];
  for (int i = 0; i < n; i++) {
    if (pread(fds[i], buf, sizeof buf, 0) < 0) perror("pread");
  }
}

enum { kMaxFiles = 16384 };
static int fast[kMaxFiles], slow[kMaxFiles];

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr,
            "usage: read_floor SECONDS FAST_US FAST_LIST SLOW_EVERY "
            "SLOW_LIST\n");
    return 2;
  }
  long seconds = atol(argv[1]), fast_us = atol(argv[2]);
  long slow_every = atol(argv[4]);
  if (seconds < 1 || fast_us < 1 || fast_us >= 1000000 || slow_every < 1) {
    fprintf(stderr, "read_floor: bad SECONDS, FAST_US or SLOW_EVERY\n");
    return 2;
  }
  int nfast = OpenList(argv[3], fast, kMaxFiles);
  int nslow = OpenList(argv[5], slow, kMaxFiles);
  if (nfast < 0 || nslow < 0) return 1;
  printf("%d files every %ld us, %d more every %ld wake-ups\n", nfast, fast_us,
         nslow, slow_every);
  fflush(stdout);
  int t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  struct itimerspec it = {{0, fast_us * 1000L}, {0, fast_us * 1000L}};
  int e = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = t};
  if (t < 0 || e < 0 || timerfd_settime(t, 0, &it, NULL) != 0 ||
      epoll_ctl(e, EPOLL_CTL_ADD, t, &ev) != 0) {
    perror("read_floor");
    return 1;
  }
  long wakes = seconds * 1000000L / fast_us;
  for (long i = 0; i < wakes; i++) {
    struct epoll_event out;
    uint64_t expirations;
    if (epoll_wait(e, &out, 1, -1) != 1) break;
    if (read(t, &expirations, sizeof expirations) < 0) break;
    ReadAll(fast, nfast);
    if (i % slow_every == 0) ReadAll(slow, nslow);
  }
  return 0;
}

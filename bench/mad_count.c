/* MADs a libibumad program sends, by management class and attribute: an
 * LD_PRELOAD shim over umad_send (libibumad), for benches that compare
 * fabricmon's MADs with a peer tool's (bench/sweep_vs_ibqueryerrors.cc).
 * Every umad_send is one try on the wire, so a retry counts again. The
 * same shim counts fabricmon (in process or its MAD broker, a process of
 * its own) and infiniband-diags (libibmad sends through umad_send too), so
 * the two sides are counted alike. Works under ibsim's umad2sim, which
 * intercepts the system calls beneath libibumad, not umad_send.
 *
 * MAD_COUNT_DIR=<dir>: each process writes <dir>/<pid>.txt, one line
 * "class attribute count" per pair (hex class and attribute, decimal
 * count), rewritten whole every 100 ms while it changes (by a thread the
 * shim starts at the first send, so that a daemon's counts can be read
 * between two sweeps) and at exit. Without MAD_COUNT_DIR it counts
 * nothing and writes nothing.
 *
 * Thread-safety: umad_send may be called from any thread; the table is
 * under one mutex.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kMaxPairs = 128 };

struct Pair {
  uint8_t mgmt_class;
  uint16_t attribute;
  unsigned long count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct Pair pairs[kMaxPairs];
static int npairs;
static unsigned long changes; /* sends since the start, under lock */
static pthread_once_t flusher_once = PTHREAD_ONCE_INIT;

typedef int (*SendFn)(int, int, void*, int, int, int);

/* Rewrites this process's file from the table. */
static void Flush(void) {
  const char* dir = getenv("MAD_COUNT_DIR");
  if (!dir) return;
  char path[4096], tmp[4096], text[kMaxPairs * 32];
  snprintf(path, sizeof(path), "%s/%d.txt", dir, (int)getpid());
  snprintf(tmp, sizeof(tmp), "%s/.%d.tmp", dir, (int)getpid());
  size_t used = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < npairs; ++i) {
    used += (size_t)snprintf(text + used, sizeof(text) - used,
                             "%02x %04x %lu\n", pairs[i].mgmt_class,
                             pairs[i].attribute, pairs[i].count);
  }
  pthread_mutex_unlock(&lock);
  /* Written aside and renamed: a reader never sees half a file. */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t n = write(fd, text, used);
  close(fd);
  if (n == (ssize_t)used) rename(tmp, path);
}

static void* Flusher(void* arg) {
  (void)arg;
  unsigned long written = 0;
  const struct timespec tick = {0, 100 * 1000 * 1000};
  for (;;) {
    nanosleep(&tick, NULL);
    pthread_mutex_lock(&lock);
    unsigned long now = changes;
    pthread_mutex_unlock(&lock);
    if (now != written) {
      Flush();
      written = now;
    }
  }
  return NULL;
}

static void StartFlusher(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, Flusher, NULL) == 0) pthread_detach(t);
}

__attribute__((destructor)) static void AtExit(void) {
  if (npairs > 0) Flush();
}

int umad_send(int fd, int agentid, void* umad, int length, int timeout_ms,
              int retries) {
  static SendFn real;
  if (!real) real = (SendFn)dlsym(RTLD_NEXT, "umad_send");
  if (getenv("MAD_COUNT_DIR") && umad && length >= 24) {
    const uint8_t* mad = (const uint8_t*)umad_get_mad(umad);
    const uint8_t mgmt_class = mad[1];
    const uint16_t attribute = (uint16_t)(mad[16] << 8 | mad[17]);
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < npairs && (pairs[i].mgmt_class != mgmt_class ||
                          pairs[i].attribute != attribute)) {
      ++i;
    }
    if (i == npairs && npairs < kMaxPairs) {
      pairs[npairs++] = (struct Pair){mgmt_class, attribute, 0};
    }
    if (i < npairs) ++pairs[i].count;
    ++changes;
    pthread_mutex_unlock(&lock);
    pthread_once(&flusher_once, StartFlusher);
  }
  return real ? real(fd, agentid, umad, length, timeout_ms, retries) : -1;
}

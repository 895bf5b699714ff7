/* Whether batching a tick's probes (or a responder's answers) into one
 * sendmmsg would save anything: the time per 96-byte datagram sent to a
 * loopback socket with one sendto each and with one sendmmsg for the batch,
 * alternating, argv[2] rounds (default 20000) of argv[1] datagrams
 * (default 10: a 1,000-peer prober's tick). With DF=1 in the environment
 * the socket sets IP_PMTUDISC_DO, as the probe socket does (no IP ID chosen
 * per datagram). The receiver is drained between sends, outside the timing.
 * Usage: cc -O2 -o /tmp/send_batch bench/send_batch.c && /tmp/send_batch 10
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

enum { kMax = 64 };

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  int batch = argc > 1 ? atoi(argv[1]) : 10;
  int rounds = argc > 2 ? atoi(argv[2]) : 20000;
  if (batch < 1 || batch > kMax || rounds < 1) {
    fprintf(stderr, "usage: %s [BATCH 1..%d] [ROUNDS]\n", argv[0], kMax);
    return 2;
  }
  int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in to = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof to;
  if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr*)&to, sizeof to) != 0 ||
      getsockname(rx, (struct sockaddr*)&to, &len) != 0) {
    perror("socket");
    return 1;
  }
  int buf = 1 << 22;
  setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  if (getenv("DF")) {
    int v = IP_PMTUDISC_DO;
    setsockopt(tx, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof v);
  }
  static char out[96], in[kMax][128];
  static struct mmsghdr msgs[kMax], reads[kMax];
  static struct iovec iov[kMax], riov[kMax];
  for (int i = 0; i < kMax; ++i) {
    iov[i] = (struct iovec){out, sizeof out};
    msgs[i].msg_hdr = (struct msghdr){.msg_name = &to,
                                      .msg_namelen = sizeof to,
                                      .msg_iov = &iov[i],
                                      .msg_iovlen = 1};
    riov[i] = (struct iovec){in[i], sizeof in[i]};
    reads[i].msg_hdr = (struct msghdr){.msg_iov = &riov[i], .msg_iovlen = 1};
  }
  double one_each = 0, batched = 0;
  for (int r = 0; r < rounds; ++r) {
    double t0 = Now();
    for (int i = 0; i < batch; ++i) {
      sendto(tx, out, sizeof out, 0, (struct sockaddr*)&to, sizeof to);
    }
    one_each += Now() - t0;
    while (recvmmsg(rx, reads, kMax, MSG_DONTWAIT, NULL) > 0) {
    }
    t0 = Now();
    sendmmsg(tx, msgs, (unsigned)batch, 0);
    batched += Now() - t0;
    while (recvmmsg(rx, reads, kMax, MSG_DONTWAIT, NULL) > 0) {
    }
  }
  printf("batch %d%s: sendto %.2f us per datagram, sendmmsg %.2f us\n", batch,
         getenv("DF") ? " (DF)" : "", one_each / rounds / batch * 1e6,
         batched / rounds / batch * 1e6);
  return 0;
}

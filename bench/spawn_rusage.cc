// Runs one command and reports the CPU time and peak RSS of that process
// alone, for bench/compare_node_exporter.sh.
//
//   spawn_rusage OUT PROGRAM [ARGS...]
//     PROGRAM's stdout goes to the file OUT, its stderr to /dev/null. Prints
//     "pid N" as soon as it is started (so a caller can signal it), then,
//     once it has exited, "rusage UTIME_US STIME_US MAXRSS_KIB EXIT_CODE".
//
// Why not fork from the Python script: wait4() on a child forked from the
// interpreter charges the child with copying the interpreter's page tables
// (~7 ms here) and reports the interpreter's RSS as the child's peak when it
// is the larger (ru_maxrss is kept across exec). posix_spawn from this small
// process does neither.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdio>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: spawn_rusage OUT PROGRAM [ARGS...]\n");
    return 2;
  }
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, argv[1],
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  if (int err =
          posix_spawn(&pid, argv[2], &files, nullptr, argv + 2, environ)) {
    std::fprintf(stderr, "spawn_rusage: cannot run %s (errno %d)\n", argv[2],
                 err);
    return 127;
  }
  std::printf("pid %d\n", static_cast<int>(pid));
  std::fflush(stdout);
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) return 127;
  auto us = [](const timeval& t) { return t.tv_sec * 1000000L + t.tv_usec; };
  std::printf("rusage %ld %ld %ld %d\n", us(ru.ru_utime), us(ru.ru_stime),
              ru.ru_maxrss,
              WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  return 0;
}

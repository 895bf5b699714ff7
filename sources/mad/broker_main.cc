// fabricmon-mad-broker: the one fabricmon process that opens umad. It
// serves one connection (broker.h) and exits when the client closes it.
// The connection is fd 3 from systemd (fabricmon-mad-broker.socket,
// Accept=yes) or from the daemon that spawned it (`--fd 3`). Logs go to
// stderr (the journal under systemd). Exit 0 when the client hung up.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>

#include "sources/mad/broker.h"
#include "sources/mad/umad_transport.h"

using namespace fabric::mad;

namespace {

// sd_listen_fds(3)'s protocol, read directly as the daemon does not link
// libsystemd either: one passed descriptor, fd 3, meant for this process.
bool SystemdPassedOneFd() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  return pid && fds && std::to_string(::getpid()) == pid &&
         std::string(fds) == "1";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fabricmon-mad-broker: sends the daemon's Get MADs, nothing else"};
  int fd = -1;
  broker::Limits limits;
  std::string level = "info";
  app.add_option("--fd", fd,
                 "the connected socket to serve (default: the one systemd "
                 "passes)");
  app.add_option("--max-in-flight", limits.max_in_flight,
                 "MADs in flight at once")
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-per-destination", limits.max_per_destination,
                 "MADs in flight to one LID or node (directed routes are "
                 "resolved to the node they end at)")
      ->check(CLI::Range(1, 256));
  app.add_option("--max-hops", limits.max_hops,
                 "longest directed route served (IBA allows 63)")
      ->check(CLI::Range(1, 63));
  app.add_option("--log.level", level, "trace, debug, info, warn, error");
  CLI11_PARSE(app, argc, argv);

  spdlog::set_default_logger(spdlog::stderr_logger_st("fabricmon-mad-broker"));
  spdlog::set_pattern("fabricmon-mad-broker: %l: %v");
  spdlog::set_level(spdlog::level::from_str(level));
  if (fd < 0) {
    if (!SystemdPassedOneFd()) {
      spdlog::error(
          "no connection to serve: give --fd, or start me from "
          "fabricmon-mad-broker.socket");
      return 2;
    }
    fd = 3;
  }
  // libibumad once, before serving: ibsim's umad2sim sets itself up on the
  // first call.
  std::string ignored;
  LocalIbPorts(&ignored);
  const broker::Deps deps{
      .list_ports = LocalIbPorts,
      .open = [](const std::string& ca, int port,
                 std::string* error) -> std::unique_ptr<fabric::MadTransport> {
        return UmadTransport::Open(ca, port, error);
      }};
  return broker::Serve(fd, deps, limits);
}

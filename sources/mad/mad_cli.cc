#include "sources/mad/mad_cli.h"

#include <CLI/CLI.hpp>

#include "sources/mad/broker_client.h"

namespace fabric::mad {

void MadCli::AddTo(CLI::App& app) {
  app.add_option("--ca", ca, "local CA (default: first with an active port)");
  app.add_option("--port", port, "local port (default: first active)");
  app.add_option("--mad-timeout-ms", timeout_ms);
  app.add_option("--mad-retries", retries);
  app.add_option("--max-outstanding", max_outstanding);
  app.add_option("--max-per-destination", max_per_destination);
}

MadOptions MadCli::Options() const {
  MadOptions options;
  options.timeout = std::chrono::milliseconds(timeout_ms);
  options.retries = retries;
  options.max_outstanding = max_outstanding;
  options.max_per_destination = max_per_destination;
  return options;
}

std::unique_ptr<MadTransport> OpenOperatorMad(const MadCli& cli,
                                              LocalPort* local,
                                              std::string* error,
                                              std::vector<LocalPort>* ports) {
  const std::vector<LocalPort> found = LocalIbPorts(error);
  if (ports) *ports = found;
  if (!PickLocalPort(found, cli.ca, cli.port, local)) {
    *error = "no usable IB port" + (error->empty() ? "" : ": " + *error);
    return nullptr;
  }
  auto umad = UmadTransport::Open(local->ca, local->port, error);
  if (!umad) return nullptr;
  return broker::AllowListed(std::move(umad));
}

}  // namespace fabric::mad

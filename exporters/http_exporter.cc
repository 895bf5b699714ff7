#include "exporters/http_exporter.h"

#include <exception>

namespace fabric {

std::string CivetAddress(const std::string& listen_address) {
  if (!listen_address.empty() && listen_address.front() == ':') {
    return "0.0.0.0" + listen_address;
  }
  return listen_address;
}

std::unique_ptr<HttpExporter> HttpExporter::Start(
    const std::string& listen_address,
    std::shared_ptr<prometheus::Collectable> collectable, std::string* error) {
  std::unique_ptr<HttpExporter> out(new HttpExporter());
  out->listen_address_ = listen_address;
  out->civet_address_ = CivetAddress(listen_address);
  out->collectable_ = std::move(collectable);
  try {
    // Two threads: scrapes only serialize snapshots, so more buys nothing.
    out->exposer_ =
        std::make_unique<prometheus::Exposer>(out->civet_address_, 2);
  } catch (const std::exception& e) {
    *error = "cannot listen on " + listen_address + ": " + e.what();
    return nullptr;
  }
  out->exposer_->RegisterCollectable(out->collectable_, "/metrics");
  return out;
}

int HttpExporter::port() const {
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

std::string HttpExporter::BoundAddress() const {
  std::string host = civet_address_.substr(0, civet_address_.rfind(':'));
  return host + ":" + std::to_string(port());
}

}  // namespace fabric

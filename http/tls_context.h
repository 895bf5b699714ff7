// Builds the OpenSSL server context for a web config's tls_server_config:
// certificate chain and key, client certificate policy, protocol versions.
// Files are read here, once per (re)load, so a missing or bad file is
// reported at start and on SIGHUP, naming the key and its line. Each is read
// with core/fd_read.h (a regular file, size-capped: a FIFO or /dev/zero is
// refused, never waited on) and handed to OpenSSL from memory.
//
// Thread-safety: MakeTlsContext is a pure function of the files it reads.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "http/web_config.h"

namespace fabric::http {

// nullptr with *error ("web config error: tls_server_config.cert_file
// (line 2): cannot load ...") when a file is missing or does not match.
std::shared_ptr<boost::asio::ssl::context> MakeTlsContext(const TlsConfig& tls,
                                                          std::string* error);

}  // namespace fabric::http

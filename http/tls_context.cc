#include "http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace fabric::http {
namespace {

namespace ssl = boost::asio::ssl;

std::string OpensslReason() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

std::string KeyError(const TlsConfig& tls, const std::string& key,
                     const std::string& what) {
  std::string out = "web config error: tls_server_config." + key;
  auto it = tls.lines.find("tls_server_config." + key);
  if (it != tls.lines.end() && it->second > 0) {
    out += " (line " + std::to_string(it->second) + ")";
  }
  return out + ": " + what;
}

}  // namespace

std::shared_ptr<ssl::context> MakeTlsContext(const TlsConfig& tls,
                                             std::string* error) {
  ERR_clear_error();
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, tls.min_version);
  SSL_CTX_set_max_proto_version(native, tls.max_version);
  // No renegotiation and no compression (CRIME); server picks the cipher.
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                  SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate_chain_file(native, tls.cert_file.c_str()) != 1) {
    *error = KeyError(
        tls, "cert_file",
        "cannot load certificate " + tls.cert_file + ": " + OpensslReason());
    return nullptr;
  }
  if (SSL_CTX_use_PrivateKey_file(native, tls.key_file.c_str(),
                                  SSL_FILETYPE_PEM) != 1) {
    *error = KeyError(
        tls, "key_file",
        "cannot load private key " + tls.key_file + ": " + OpensslReason());
    return nullptr;
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    *error = KeyError(tls, "key_file",
                      tls.key_file + " does not match " + tls.cert_file);
    ERR_clear_error();
    return nullptr;
  }
  if (!tls.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(native, tls.client_ca_file.c_str(),
                                      nullptr) != 1) {
      *error = KeyError(tls, "client_ca_file",
                        "cannot load CA certificates " + tls.client_ca_file +
                            ": " + OpensslReason());
      return nullptr;
    }
    // Tell clients which CAs are accepted (curl and Go pick a cert by it).
    STACK_OF(X509_NAME)* names =
        SSL_load_client_CA_file(tls.client_ca_file.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(native, names);
  }
  // Any certificate is accepted in the two modes that do not verify.
  auto accept_any = [](int, X509_STORE_CTX*) { return 1; };
  switch (tls.client_auth) {
    case ClientAuth::kNoClientCert:
      SSL_CTX_set_verify(native, SSL_VERIFY_NONE, nullptr);
      break;
    case ClientAuth::kRequestClientCert:
      SSL_CTX_set_verify(native, SSL_VERIFY_PEER, accept_any);
      break;
    case ClientAuth::kRequireAnyClientCert:
      SSL_CTX_set_verify(native,
                         SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                         accept_any);
      break;
    case ClientAuth::kVerifyClientCertIfGiven:
      SSL_CTX_set_verify(native, SSL_VERIFY_PEER, nullptr);
      break;
    case ClientAuth::kRequireAndVerifyClientCert:
      SSL_CTX_set_verify(
          native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  return ctx;
}

}  // namespace fabric::http

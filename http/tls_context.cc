#include "http/tls_context.h"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <cstring>

#include "sources/fd_read.h"

namespace fabric::http {
namespace {

namespace ssl = boost::asio::ssl;

// The largest certificate file read (a chain, or a CA bundle such as the
// system's ~220 KB one) and the largest private key file.
constexpr std::size_t kMaxCertFileBytes = 1 << 20;
constexpr std::size_t kMaxKeyFileBytes = 64 << 10;

std::string KeyError(const TlsConfig& tls, const std::string& key,
                     const std::string& what) {
  std::string out = "web config error: tls_server_config." + key;
  auto it = tls.lines.find("tls_server_config." + key);
  if (it != tls.lines.end() && it->second > 0) {
    out += " (line " + std::to_string(it->second) + ")";
  }
  return out + ": " + what;
}

// One subject alternative name as text: DNS, email and URI names as they
// are, IP addresses in inet_ntop form.
std::string SanText(const GENERAL_NAME* name) {
  int type = 0;
  void* value = GENERAL_NAME_get0_value(name, &type);
  // Only these types hold an ASN1_STRING (a dirName, otherName, ... does
  // not): check the type before reading it as one.
  if (value == nullptr || (type != GEN_DNS && type != GEN_EMAIL &&
                           type != GEN_URI && type != GEN_IPADD)) {
    return "";
  }
  const auto* text = static_cast<const ASN1_STRING*>(value);
  const auto* data = ASN1_STRING_get0_data(text);
  const int size = ASN1_STRING_length(text);
  if (type != GEN_IPADD) {
    return std::string(reinterpret_cast<const char*>(data), size);
  }
  char ip[INET6_ADDRSTRLEN] = {};
  const int family = size == 4 ? AF_INET : size == 16 ? AF_INET6 : 0;
  if (family == 0 || !inet_ntop(family, data, ip, sizeof(ip))) return "";
  return ip;
}

// An allowed IP written any valid way ("::0001") matches its inet_ntop form.
std::string Canonical(const std::string& san) {
  unsigned char bytes[16];
  char text[INET6_ADDRSTRLEN] = {};
  for (int family : {AF_INET, AF_INET6}) {
    if (inet_pton(family, san.c_str(), bytes) == 1 &&
        inet_ntop(family, bytes, text, sizeof(text))) {
      return text;
    }
  }
  return san;
}

struct AllowedSans {
  std::vector<std::string> names;  // canonical
};

// OpenSSL's certificate check, then: the client's certificate carries one of
// the allowed names as a SAN. `arg` is the context's AllowedSans.
int VerifyWithAllowedSans(X509_STORE_CTX* store, void* arg) {
  if (X509_verify_cert(store) != 1) return 0;
  const auto* allowed = static_cast<const AllowedSans*>(arg);
  X509* cert = X509_STORE_CTX_get0_cert(store);
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  bool ok = false;
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names) && !ok;
       ++i) {
    const std::string san = SanText(sk_GENERAL_NAME_value(names, i));
    ok = !san.empty() && std::find(allowed->names.begin(), allowed->names.end(),
                                   san) != allowed->names.end();
  }
  GENERAL_NAMES_free(names);
  if (!ok) X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED);
  return ok ? 1 : 0;
}

// An ssl::context that owns the state its callbacks point to.
struct ContextWithSans {
  ssl::context context{ssl::context::tls_server};
  AllowedSans sans;
};

// The file `path` of key `key` (holding `what`) into *pem; false with
// *error naming the key, its line and why when it is not a readable regular
// file of at most `max_bytes`.
bool ReadPem(const TlsConfig& tls, const std::string& key,
             const std::string& what, const std::string& path,
             std::size_t max_bytes, std::string* pem, std::string* error) {
  FileRead file = ReadRegularFile(path, max_bytes);
  if (!file.ok()) {
    *error = KeyError(tls, key,
                      "cannot load " + what + " " + path + ": " + file.error);
    return false;
  }
  *pem = std::move(file.text);
  return true;
}

// Tells clients which CAs are accepted (curl and Go pick a certificate by
// it): the subject of every certificate in `pem`, as
// SSL_load_client_CA_file does for a path.
void AdvertiseClientCas(SSL_CTX* native, const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    SSL_CTX_add_client_CA(native, cert);
    X509_free(cert);
  }
  BIO_free(bio);
  ERR_clear_error();  // the end of the PEM text reads as an error
}

}  // namespace

std::shared_ptr<ssl::context> MakeTlsContext(const TlsConfig& tls,
                                             std::string* error) {
  ERR_clear_error();
  auto owner = std::make_shared<ContextWithSans>();
  std::shared_ptr<ssl::context> ctx(owner, &owner->context);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, tls.min_version);
  SSL_CTX_set_max_proto_version(native, tls.max_version);
  // No renegotiation and no compression (CRIME); server picks the cipher.
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                  SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Each file is read here (a regular file, size-capped, never blocking on
  // a FIFO) and handed to OpenSSL from memory: OpenSSL's own *_file loaders
  // would wait on a FIFO and read /dev/zero without end.
  boost::system::error_code ec;
  std::string pem;
  if (!ReadPem(tls, "cert_file", "certificate", tls.cert_file,
               kMaxCertFileBytes, &pem, error)) {
    return nullptr;
  }
  ctx->use_certificate_chain(boost::asio::buffer(pem), ec);
  if (ec) {
    *error = KeyError(
        tls, "cert_file",
        "cannot load certificate " + tls.cert_file + ": " + ec.message());
    return nullptr;
  }
  if (!ReadPem(tls, "key_file", "private key", tls.key_file, kMaxKeyFileBytes,
               &pem, error)) {
    return nullptr;
  }
  ctx->use_private_key(boost::asio::buffer(pem), ssl::context::pem, ec);
  OPENSSL_cleanse(pem.data(), pem.size());
  if (ec) {
    *error = KeyError(
        tls, "key_file",
        "cannot load private key " + tls.key_file + ": " + ec.message());
    return nullptr;
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    *error = KeyError(tls, "key_file",
                      tls.key_file + " does not match " + tls.cert_file);
    ERR_clear_error();
    return nullptr;
  }
  if (!tls.client_ca_file.empty()) {
    if (!ReadPem(tls, "client_ca_file", "CA certificates", tls.client_ca_file,
                 kMaxCertFileBytes, &pem, error)) {
      return nullptr;
    }
    ctx->add_certificate_authority(boost::asio::buffer(pem), ec);
    if (ec) {
      *error = KeyError(tls, "client_ca_file",
                        "cannot load CA certificates " + tls.client_ca_file +
                            ": " + ec.message());
      return nullptr;
    }
    AdvertiseClientCas(native, pem);
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
  if (!tls.client_allowed_sans.empty()) {
    for (const auto& san : tls.client_allowed_sans) {
      owner->sans.names.push_back(Canonical(san));
    }
    SSL_CTX_set_cert_verify_callback(native, VerifyWithAllowedSans,
                                     &owner->sans);
  }
  return ctx;
}

}  // namespace fabric::http

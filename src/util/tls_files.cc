#include "util/tls_files.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <sys/stat.h>
#include <unistd.h>
#include <boost/asio/ssl/error.hpp>

#include <cerrno>
#include <cstring>

namespace seedance::util {
namespace {

Status CheckFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return InvalidArgumentError(fmt::format("{}: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return InvalidArgumentError(path + ": not a regular file");
  if (::access(path.c_str(), R_OK) != 0) {
    return InvalidArgumentError(fmt::format("{}: {}", path, std::strerror(errno)));
  }
  return Status::Ok();
}

// Why OpenSSL refused the file: Asio moves OpenSSL's error code into `ec` (its message is only
// "asio.ssl error" when OpenSSL has no reason string).
std::string OpenSslReason(const boost::system::error_code& ec) {
  ERR_clear_error();
  if (ec.category() != boost::asio::error::get_ssl_category()) return ec.message();
  char reason[256] = "no reason given";
  ERR_error_string_n(static_cast<unsigned long>(ec.value()), reason,  // NOLINT(runtime/int)
                     sizeof reason);
  return reason;
}

Status Load(const char* setting, const std::string& path, const boost::system::error_code& ec,
            const char* expected) {
  if (!ec) return Status::Ok();
  const std::string reason = OpenSslReason(ec);
  if (Status s = CheckFile(path); !s.ok()) {
    return InvalidArgumentError(fmt::format("{} {}", setting, s.message()));
  }
  return InvalidArgumentError(fmt::format("{} {}: not {} ({})", setting, path, expected, reason));
}

}  // namespace

Status CheckReadableFile(const ParamValue& value) {
  const std::string& path = std::get<std::string>(value);
  return path.empty() ? Status::Ok() : CheckFile(path);
}

Status LoadCaFile(boost::asio::ssl::context& ctx, const std::string& ca_file, const char* setting) {
  boost::system::error_code ec;
  if (ca_file.empty()) {
    ctx.set_default_verify_paths(ec);
    if (ec) return InvalidArgumentError("system CA certificates: " + OpenSslReason(ec));
    return Status::Ok();
  }
  ctx.load_verify_file(ca_file, ec);
  return Load(setting, ca_file, ec, "a PEM file of CA certificates");
}

Status LoadCertificate(boost::asio::ssl::context& ctx, const std::string& cert_file,
                       const std::string& key_file) {
  boost::system::error_code ec;
  ctx.use_certificate_chain_file(cert_file, ec);
  SEEDANCE_RETURN_IF_ERROR(Load("tls.cert_file", cert_file, ec, "a PEM certificate chain"));
  ctx.use_private_key_file(key_file, boost::asio::ssl::context::pem, ec);
  return Load("tls.key_file", key_file, ec, "a PEM private key matching tls.cert_file");
}

}  // namespace seedance::util

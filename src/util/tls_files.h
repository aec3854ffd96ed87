// Loading the PEM files TLS settings name (CA bundles, client certificates and keys), with
// errors that say which file and why: Asio reports only "asio.ssl error".
#pragma once

#include <boost/asio/ssl/context.hpp>

#include <string>

#include "seedance/param_spec.h"
#include "seedance/status.h"

namespace seedance::util {

// A ParamSpec validator for a file `run` reads at start: empty (unset), or a readable regular
// file now. So `validate` refuses a missing tls.ca_file with file:line.
Status CheckReadableFile(const ParamValue& value);

// Loads `ca_file` into `ctx` (the system CAs when empty); errors name the setting, the path
// and the reason (missing, not readable, not PEM).
Status LoadCaFile(boost::asio::ssl::context& ctx, const std::string& ca_file,
                  const char* setting = "tls.ca_file");
// Loads a certificate chain and its private key (a client's, or a server's).
Status LoadCertificate(boost::asio::ssl::context& ctx, const std::string& cert_file,
                       const std::string& key_file);

}  // namespace seedance::util

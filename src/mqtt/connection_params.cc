#include "mqtt/connection_params.h"

#include <boost/asio/ssl/context.hpp>
#include <chrono>

#include "mqtt/broker_uri.h"
#include "util/tls_files.h"

namespace seedance::mqtt {
namespace {

Status ValidateUri(const ParamValue& v) {
  return ParseBrokerUri(std::get<std::string>(v)).status();
}

// MQTT's keep-alive is a 16-bit count of seconds: 0 (off) or 1..65535 whole seconds. (It was
// cast: 65536s and 0.4s turned keep-alive off, 70000s became 4,464 s.)
Status KeepAliveSeconds(const ParamValue& v) {
  const auto* d = std::get_if<std::chrono::nanoseconds>(&v);
  if (d == nullptr) return Status::Ok();
  if (d->count() % 1'000'000'000 != 0 || *d > std::chrono::seconds(65535)) {
    return InvalidArgumentError("must be 0 (off) or whole seconds from 1s to 65535s");
  }
  return Status::Ok();
}

std::chrono::milliseconds Ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d);
}

}  // namespace

std::vector<ParamSpec> ConnectionParamSpecs(const std::string& client_id_doc) {
  return {
      {.name = "uri",
       .type = ParamType::kString,
       .doc = "broker URI: tcp://host:1883 or ssl://host:8883",
       .required = true,
       .validator = ValidateUri},
      {.name = "protocol",
       .type = ParamType::kString,
       .doc = "MQTT protocol version",
       .default_value = "5",
       .allowed = {"5", "3.1.1"}},
      {.name = "client_id", .type = ParamType::kString, .doc = client_id_doc},
      {.name = "username", .type = ParamType::kString, .doc = "user name for the broker"},
      {.name = "password", .type = ParamType::kString, .doc = "password (use ${ENV_VAR})"},
      {.name = "persistent_session",
       .type = ParamType::kBool,
       .doc = "keep the session (and queued QoS 1/2 messages) on the broker across restarts; "
              "default true when qos is 1 or 2, false for qos 0"},
      {.name = "session_expiry",
       .type = ParamType::kDuration,
       .doc = "MQTT 5: how long the broker keeps a persistent session",
       .default_value = "1h"},
      {.name = "keep_alive",
       .type = ParamType::kDuration,
       .doc = "MQTT keep-alive interval: 0 (off) or whole seconds up to 65535s",
       .default_value = "30s",
       .validator = KeepAliveSeconds},
      {.name = "connect_timeout",
       .type = ParamType::kDuration,
       .doc = "limit for TCP connect, TLS handshake and CONNACK",
       .default_value = "10s"},
      {.name = "reconnect_min",
       .type = ParamType::kDuration,
       .doc = "first reconnect delay (doubles up to reconnect_max)",
       .default_value = "200ms"},
      {.name = "reconnect_max",
       .type = ParamType::kDuration,
       .doc = "longest reconnect delay",
       .default_value = "30s"},
      {.name = "max_packet_size",
       .type = ParamType::kSize,
       .doc = "largest packet accepted from the broker",
       .default_value = "16MiB"},
      {.name = "tls",
       .type = ParamType::kObject,
       .doc = "TLS settings (ssl:// URIs)",
       .fields =
           {
               {.name = "ca_file",
                .type = ParamType::kString,
                .doc = "PEM file of CAs to verify the broker; system CAs when unset",
                .validator = util::CheckReadableFile},
               {.name = "cert_file",
                .type = ParamType::kString,
                .doc = "client certificate (PEM)",
                .validator = util::CheckReadableFile},
               {.name = "key_file",
                .type = ParamType::kString,
                .doc = "client private key (PEM)",
                .validator = util::CheckReadableFile},
               {.name = "verify",
                .type = ParamType::kBool,
                .doc = "verify the broker's certificate and name",
                .default_value = "true"},
               {.name = "server_name",
                .type = ParamType::kString,
                .doc = "name to verify and send as SNI; the URI's host when unset"},
           }},
  };
}

Result<ClientOptions> ReadConnectionParams(const Params& p, std::string default_client_id,
                                           int qos) {
  SEEDANCE_ASSIGN_OR_RETURN(BrokerAddress addr, ParseBrokerUri(p.GetString("uri")));
  ClientOptions o;
  o.host = addr.host;
  o.port = addr.port;
  o.tls.enabled = addr.tls;
  const Params& tls = p.GetObject("tls");
  o.tls.ca_file = tls.GetString("ca_file");
  o.tls.cert_file = tls.GetString("cert_file");
  o.tls.key_file = tls.GetString("key_file");
  o.tls.verify = tls.Has("verify") ? tls.GetBool("verify") : true;
  o.tls.server_name = tls.GetString("server_name");
  if (o.tls.cert_file.empty() != o.tls.key_file.empty()) {
    return InvalidArgumentError(p.Location("tls") + ": tls.cert_file and tls.key_file go together");
  }
  if (o.tls.enabled) {
    // Load the files once now, so `validate` and start-up refuse what every connection
    // attempt would (the client loads them again when it connects).
    boost::asio::ssl::context probe(boost::asio::ssl::context::tls_client);
    Status s = util::LoadCaFile(probe, o.tls.ca_file);
    if (s.ok() && !o.tls.cert_file.empty()) {
      s = util::LoadCertificate(probe, o.tls.cert_file, o.tls.key_file);
    }
    if (!s.ok()) return InvalidArgumentError(p.Location("tls") + ": " + s.message());
  }
  o.version = p.GetString("protocol") == "3.1.1" ? Version::kV311 : Version::kV5;
  o.client_id = p.Has("client_id") ? p.GetString("client_id") : std::move(default_client_id);
  if (p.Has("username")) o.username = p.GetString("username");
  if (p.Has("password")) o.password = p.GetString("password");
  const bool persistent = p.Has("persistent_session") ? p.GetBool("persistent_session") : qos >= 1;
  o.clean_start = !persistent;
  o.session_expiry_s = persistent
                           ? static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                                       p.GetDuration("session_expiry"))
                                                       .count())
                           : 0;
  o.keep_alive_s = static_cast<uint16_t>(
      std::chrono::duration_cast<std::chrono::seconds>(p.GetDuration("keep_alive")).count());
  o.connect_timeout = Ms(p.GetDuration("connect_timeout"));
  o.reconnect_min = Ms(p.GetDuration("reconnect_min"));
  o.reconnect_max = Ms(p.GetDuration("reconnect_max"));
  o.max_packet_size = p.GetSize("max_packet_size");
  return o;
}

}  // namespace seedance::mqtt

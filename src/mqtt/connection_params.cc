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

}  // namespace

Options<ConnectionSettings> ConnectionSchema(const std::string& client_id_doc) {
  using S = ConnectionSettings;
  Options<TlsSettings> tls;
  tls.Add(&TlsSettings::ca_file,
          {.name = "ca_file",
           .doc = "PEM file of CAs to verify the broker; system CAs when unset",
           .validator = util::CheckReadableFile})
      .Add(&TlsSettings::cert_file, {.name = "cert_file",
                                     .doc = "client certificate (PEM)",
                                     .validator = util::CheckReadableFile})
      .Add(&TlsSettings::key_file, {.name = "key_file",
                                    .doc = "client private key (PEM)",
                                    .validator = util::CheckReadableFile})
      .Add(&TlsSettings::verify, {.name = "verify",
                                  .doc = "verify the broker's certificate and name",
                                  .default_value = "true"})
      .Add(&TlsSettings::server_name,
           {.name = "server_name",
            .doc = "name to verify and send as SNI; the URI's host when unset"});
  Options<S> o;
  o.Add(&S::uri, {.name = "uri",
                  .doc = "broker URI: tcp://host:1883 or ssl://host:8883",
                  .required = true,
                  .validator = ValidateUri})
      .Enum(&S::version, {.name = "protocol", .doc = "MQTT protocol version", .default_value = "5"},
            {{"5", Version::kV5}, {"3.1.1", Version::kV311}})
      .Add(&S::client_id, {.name = "client_id", .doc = client_id_doc})
      .Add(&S::username, {.name = "username", .doc = "user name for the broker"})
      .Add(&S::password, {.name = "password", .doc = "password (use ${ENV_VAR})"})
      .Add(&S::persistent_session,
           {.name = "persistent_session",
            .doc = "keep the session (and queued QoS 1/2 messages) on the broker across restarts; "
                   "default true when qos is 1 or 2, false for qos 0"})
      .Add(&S::session_expiry, {.name = "session_expiry",
                                .doc = "MQTT 5: how long the broker keeps a persistent session",
                                .default_value = "1h"})
      .Add(&S::keep_alive,
           {.name = "keep_alive",
            .doc = "MQTT keep-alive interval: 0 (off) or whole seconds up to 65535s",
            .default_value = "30s",
            .validator = KeepAliveSeconds})
      .Add(&S::connect_timeout, {.name = "connect_timeout",
                                 .doc = "limit for TCP connect, TLS handshake and CONNACK",
                                 .default_value = "10s"})
      .Add(&S::reconnect_min, {.name = "reconnect_min",
                               .doc = "first reconnect delay (doubles up to reconnect_max)",
                               .default_value = "200ms"})
      .Add(&S::reconnect_max,
           {.name = "reconnect_max", .doc = "longest reconnect delay", .default_value = "30s"})
      .Size(&S::max_packet_size, {.name = "max_packet_size",
                                  .doc = "largest packet accepted from the broker",
                                  .default_value = "16MiB"})
      .Section(&S::tls, {.name = "tls", .doc = "TLS settings (ssl:// URIs)"}, tls)
      .Check([](const S& s, const Params& p) {
        if (s.tls.cert_file.empty() != s.tls.key_file.empty()) {
          return InvalidArgumentError(p.Location("tls") +
                                      ": tls.cert_file and tls.key_file go together");
        }
        return Status::Ok();
      });
  return o;
}

Result<ClientOptions> ToClientOptions(const ConnectionSettings& s, const Params& p,
                                      std::string default_client_id, int qos) {
  SEEDANCE_ASSIGN_OR_RETURN(BrokerAddress addr, ParseBrokerUri(s.uri));
  ClientOptions o;
  o.host = addr.host;
  o.port = addr.port;
  o.tls.enabled = addr.tls;
  o.tls.ca_file = s.tls.ca_file;
  o.tls.cert_file = s.tls.cert_file;
  o.tls.key_file = s.tls.key_file;
  o.tls.verify = s.tls.verify;
  o.tls.server_name = s.tls.server_name;
  if (o.tls.enabled) {
    // Load the files once now, so `validate` and start-up refuse what every connection
    // attempt would (the client loads them again when it connects).
    boost::asio::ssl::context probe(boost::asio::ssl::context::tls_client);
    Status st = util::LoadCaFile(probe, o.tls.ca_file);
    if (st.ok() && !o.tls.cert_file.empty()) {
      st = util::LoadCertificate(probe, o.tls.cert_file, o.tls.key_file);
    }
    if (!st.ok()) return InvalidArgumentError(p.Location("tls") + ": " + st.message());
  }
  o.version = s.version;
  o.client_id = s.client_id.value_or(std::move(default_client_id));
  if (s.username) o.username = *s.username;
  if (s.password) o.password = *s.password;
  const bool persistent = s.persistent_session.value_or(qos >= 1);
  o.clean_start = !persistent;
  o.session_expiry_s = persistent ? static_cast<uint32_t>(s.session_expiry.count()) : 0;
  o.keep_alive_s = static_cast<uint16_t>(s.keep_alive.count());
  o.connect_timeout = s.connect_timeout;
  o.reconnect_min = s.reconnect_min;
  o.reconnect_max = s.reconnect_max;
  o.max_packet_size = s.max_packet_size;
  return o;
}

}  // namespace seedance::mqtt

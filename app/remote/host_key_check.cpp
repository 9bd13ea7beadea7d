// verifyHostKey: NOTE [Host keys] in ssh_connection.h.
#include <mutex>
#include <set>

#include "app/remote/known_hosts.h"
#include "app/remote/ssh_internal.h"

namespace fs::app::remote {

using protocol::Status;

namespace {

// Keys accepted once in this process: "hostname:port key-blob".
std::mutex& acceptedMutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& acceptedOnce() {
  static std::set<std::string> keys;
  return keys;
}

// "TYPE SHA256:... (file:line), ..."
std::string storedKeysText(const std::vector<StoredHostKey>& keys) {
  std::string text;
  for (const StoredHostKey& k : keys) {
    text += (text.empty() ? "" : ", ") + k.type + " " + k.fingerprint + " (" + k.file + ":" +
            std::to_string(k.line) + ")";
  }
  return text;
}

}  // namespace

std::string hostKeyQuestionText(const HostKeyQuestion& q) {
  const std::string where = knownHostsName(q.host, q.port);
  const std::string host = "The authenticity of host '" + where + "' (" + q.alias + ") can't be established";
  if (q.kind == HostKeyQuestion::Kind::kUnknown) {
    return host + ".\n" + q.key_type + " key fingerprint is " + q.fingerprint_sha256 + ".\n";
  }
  std::string text = host + ", but keys of other types are known for this host:\n";
  for (const StoredHostKey& k : q.known_keys) {
    text += "  " + k.type + " " + k.fingerprint + " in " + k.file + ":" + std::to_string(k.line) + "\n";
  }
  return text + "The server offers " + q.key_type + " " + q.fingerprint_sha256 +
         " instead, a key type not stored for it. Accept it only if you know that the host has a new key "
         "type; otherwise this may be an attack.\n";
}

std::string hostLabel(const HostSpec& spec) {
  return spec.alias + " (" + spec.user + "@" + spec.hostname + ":" + std::to_string(spec.port) + ")";
}

Status verifyHostKey(ssh_session session, const HostSpec& spec, Prompter& prompter) {
  const std::string label = hostLabel(spec);
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(session, &key) != SSH_OK) {
    return Status::ioError(label + ": the server sent no host key: " + ssh_get_error(session));
  }
  char* base64 = nullptr;
  const int rc = ssh_pki_export_pubkey_base64(key, &base64);
  const char* type_name = ssh_key_type_to_char(ssh_key_type(key));
  const std::string key_type = type_name != nullptr ? type_name : "";
  ssh_key_free(key);
  std::string blob;
  const bool decoded = rc == SSH_OK && base64Decode(base64, &blob);
  ssh_string_free_char(base64);
  if (!decoded) return Status::ioError(label + ": cannot read the server's host key");
  const std::string fingerprint = fingerprintSha256(blob);

  std::vector<std::string> files = spec.user_known_hosts_files;
  files.insert(files.end(), spec.global_known_hosts_files.begin(), spec.global_known_hosts_files.end());
  auto result = checkKnownHost(files, spec.hostname, spec.port, blob);
  if (!result.isOk()) return Status::ioError(label + ": " + result.status().message());
  const std::string name = knownHostsName(spec.hostname, spec.port);
  switch (result->kind) {
    case KnownHostResult::Kind::kKnown:
      return Status::ok();
    case KnownHostResult::Kind::kRevoked:
      return Status::ioError(label + ": the host key " + key_type + " " + fingerprint + " is REVOKED (" +
                             result->file + ":" + std::to_string(result->line) + "); refusing to connect");
    case KnownHostResult::Kind::kChanged:
      return Status::ioError(
          label + ": the host key of " + name + " has CHANGED: the server offers " + key_type + " " +
          fingerprint + ", but " + result->file + ":" + std::to_string(result->line) + " holds " +
          result->stored_key_type + " " + result->stored_fingerprint +
          ". Refusing to connect: this may be an attack; if the host was reinstalled, remove "
          "that line (ssh-keygen -R '" +
          name + "') and connect again");
    case KnownHostResult::Kind::kUnknown:
    case KnownHostResult::Kind::kOtherType:
      break;
  }
  // Strict checking first: a key accepted once earlier in this process (under
  // another config) is not in known_hosts either.
  const bool other_type = result->kind == KnownHostResult::Kind::kOtherType;
  const std::string stored_list = other_type ? storedKeysText(result->other_keys) : std::string();
  if (spec.strict_host_key_checking == StrictHostKeyChecking::kYes) {
    if (other_type) {
      return Status::ioError(label + ": " + name + " is known with another key type: known_hosts holds " +
                             stored_list + ", but the server offers " + key_type + " " + fingerprint +
                             "; StrictHostKeyChecking is yes; refusing to connect");
    }
    return Status::ioError(label + ": the host key " + key_type + " " + fingerprint + " of " + name +
                           " is not in known_hosts and StrictHostKeyChecking is yes; refusing to connect");
  }
  const std::string remembered = name + " " + blob;
  {
    std::lock_guard<std::mutex> lock(acceptedMutex());
    if (acceptedOnce().count(remembered) != 0) return Status::ok();
  }
  if (other_type && !prompter.asksAbout(HostKeyQuestion::Kind::kOtherType)) {
    return Status::ioError(label + ": " + name + " is known with another key type: known_hosts holds " +
                           stored_list + ", but the server offers " + key_type + " " + fingerprint +
                           ". Refusing to connect: this may be an attack; if the host has a new key type, "
                           "check its fingerprint and add it to known_hosts");
  }
  HostKeyQuestion question;
  question.host = spec.hostname;
  question.port = spec.port;
  question.alias = spec.alias;
  question.key_type = key_type;
  question.fingerprint_sha256 = fingerprint;
  if (other_type) {
    question.kind = HostKeyQuestion::Kind::kOtherType;
    question.known_keys = result->other_keys;
  }
  question.save_file =
      spec.user_known_hosts_files.empty() ? std::string() : spec.user_known_hosts_files.front();
  const HostKeyAnswer answer = prompter.hostKey(question);
  if (answer == HostKeyAnswer::kReject) {
    return Status::ioError(label + ": the host key " + key_type + " " + fingerprint + " was not accepted");
  }
  if (answer == HostKeyAnswer::kAcceptAndSave) {
    if (question.save_file.empty())
      return Status::ioError(label + ": no UserKnownHostsFile to save the host key in");
    Status saved = appendKnownHost(question.save_file, spec.hostname, spec.port, blob);
    if (!saved.isOk()) return Status::ioError(label + ": " + saved.message());
  }
  std::lock_guard<std::mutex> lock(acceptedMutex());
  acceptedOnce().insert(remembered);
  return Status::ok();
}

}  // namespace fs::app::remote

// authenticate: NOTE [Authentication order] in ssh_connection.h.
#include <openssl/crypto.h>
#include <unistd.h>

#include <cstdlib>

#include "app/remote/ssh_internal.h"

namespace fs::app::remote {

using protocol::Status;

Secret& Secret::operator=(Secret&& other) noexcept {
  if (this != &other) {
    clear();
    value_ = std::move(other.value_);
    other.clear();
  }
  return *this;
}

void Secret::clear() {
  if (!value_.empty()) OPENSSL_cleanse(value_.data(), value_.size());
  value_.clear();
}

namespace {

struct ImportProbe {
  bool asked = false;
};

// libssh asks this for the passphrase of an encrypted key: we only note that
// it is encrypted and decline, then ask the Prompter ourselves.
int noteEncrypted(const char*, char*, size_t, int, int, void* userdata) {
  static_cast<ImportProbe*>(userdata)->asked = true;
  return -1;
}

std::string shortPath(const std::string& path) {
  const std::string home = localHomeDirectory();
  if (!home.empty() && home != "/" && path.rfind(home + "/", 0) == 0) return "~" + path.substr(home.size());
  return path;
}

// The result of offering one identity file.
enum class Offer { kSuccess, kDenied, kFailed };

Offer tryIdentityFile(ssh_session session, const std::string& file, Prompter& prompter, std::string* note) {
  if (access(file.c_str(), R_OK) != 0) {
    *note = "missing";
    return Offer::kFailed;
  }
  // Would the server take it? Ask with the public key before any passphrase.
  ssh_key pub = nullptr;
  if (ssh_pki_import_pubkey_file((file + ".pub").c_str(), &pub) == SSH_OK) {
    const int rc = ssh_userauth_try_publickey(session, nullptr, pub);
    ssh_key_free(pub);
    if (rc == SSH_AUTH_DENIED) {
      *note = "not accepted";
      return Offer::kDenied;
    }
    if (rc == SSH_AUTH_ERROR) {
      *note = std::string("error: ") + ssh_get_error(session);
      return Offer::kFailed;
    }
  }
  ImportProbe probe;
  ssh_key key = nullptr;
  int rc = ssh_pki_import_privkey_file(file.c_str(), nullptr, noteEncrypted, &probe, &key);
  if (rc != SSH_OK && probe.asked) {
    for (int attempt = 1; attempt <= 3 && rc != SSH_OK; ++attempt) {
      std::optional<Secret> secret = prompter.passphrase(file, attempt);
      if (!secret) {
        *note = "encrypted, no passphrase given";
        return Offer::kFailed;
      }
      rc = ssh_pki_import_privkey_file(file.c_str(), secret->c_str(), nullptr, nullptr, &key);
      secret->clear();
    }
    if (rc != SSH_OK) {
      *note = "wrong passphrase (3 attempts)";
      return Offer::kFailed;
    }
  } else if (rc != SSH_OK) {
    *note = "not a private key libssh can read";
    return Offer::kFailed;
  }
  rc = ssh_userauth_publickey(session, nullptr, key);
  ssh_key_free(key);
  if (rc == SSH_AUTH_SUCCESS) return Offer::kSuccess;
  if (rc == SSH_AUTH_PARTIAL) {
    *note = "accepted, but the server wants a further method (not supported)";
    return Offer::kFailed;
  }
  if (rc == SSH_AUTH_ERROR) {
    *note = std::string("error: ") + ssh_get_error(session);
    return Offer::kFailed;
  }
  *note = "not accepted";
  return Offer::kDenied;
}

}  // namespace

Status authenticate(ssh_session session, const HostSpec& spec, Prompter& prompter) {
  const std::string label = hostLabel(spec);
  // "none" first: some servers let it through, and it gives the method list.
  int rc = ssh_userauth_none(session, nullptr);
  if (rc == SSH_AUTH_SUCCESS) return Status::ok();
  if (rc == SSH_AUTH_ERROR)
    return Status::ioError(label + ": authentication failed: " + ssh_get_error(session));
  const int methods = ssh_userauth_list(session, nullptr);
  if ((methods & SSH_AUTH_METHOD_PUBLICKEY) == 0) {
    return Status::ioError(label +
                           ": the server does not offer public key authentication (the only kind supported)");
  }
  std::vector<std::string> tried;
  if (!spec.identities_only && spec.identity_agent != "none") {
    std::string socket = spec.identity_agent;
    if (socket.empty() || socket == "SSH_AUTH_SOCK") {
      const char* env = std::getenv("SSH_AUTH_SOCK");
      socket = env != nullptr ? env : "";
    }
    if (!socket.empty()) {
      ssh_options_set(session, SSH_OPTIONS_IDENTITY_AGENT, socket.c_str());
      rc = ssh_userauth_agent(session, nullptr);
      if (rc == SSH_AUTH_SUCCESS) return Status::ok();
      if (rc == SSH_AUTH_PARTIAL) {
        return Status::ioError(label +
                               ": a key from the agent was accepted, but the server wants a further method");
      }
      tried.push_back(
          "agent " + shortPath(socket) +
          (access(socket.c_str(), R_OK | W_OK) == 0 ? " (no key accepted)" : " (cannot reach it)"));
    }
  }
  for (const std::string& file : spec.identity_files) {
    std::string note;
    const Offer offer = tryIdentityFile(session, file, prompter, &note);
    if (offer == Offer::kSuccess) return Status::ok();
    if (!ssh_is_connected(session)) {
      return Status::ioError(label + ": the connection closed during authentication (" + shortPath(file) +
                             ": " + note + ")");
    }
    tried.push_back(shortPath(file) + " (" + note + ")");
  }
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
  return Status::ioError(label + ": permission denied (publickey); tried " +
                         (list.empty() ? "no keys" : list));
}

}  // namespace fs::app::remote

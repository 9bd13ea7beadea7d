#include "app/remote/known_hosts.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "app/remote/ssh_patterns.h"

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

namespace {

using patterns::globMatch;
using patterns::lower;

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

bool hashedMatch(const std::string& entry, const std::string& name) {
  // |1|base64(salt)|base64(HMAC-SHA1(salt, name))
  const auto bar = entry.find('|', 3);
  if (entry.rfind("|1|", 0) != 0 || bar == std::string::npos) return false;
  std::string salt, hash;
  if (!base64Decode(entry.substr(3, bar - 3), &salt) || !base64Decode(entry.substr(bar + 1), &hash))
    return false;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha1(), salt.data(), static_cast<int>(salt.size()),
       reinterpret_cast<const unsigned char*>(name.data()), name.size(), mac, &mac_len);
  return hash.size() == mac_len && std::memcmp(hash.data(), mac, mac_len) == 0;
}

// A comma list of patterns (or one hashed name) against the lookup name.
bool hostFieldMatches(const std::string& field, const std::string& name) {
  if (field.rfind("|1|", 0) == 0) return hashedMatch(field, name);
  bool found = false;
  std::stringstream list(field);
  std::string pattern;
  while (std::getline(list, pattern, ',')) {
    const bool negated = !pattern.empty() && pattern[0] == '!';
    const std::string p = lower(negated ? pattern.substr(1) : pattern);
    if (globMatch(name.c_str(), p.c_str())) {
      if (negated) return false;
      found = true;
    }
  }
  return found;
}

}  // namespace

std::string base64Encode(std::string_view bytes, bool pad) {
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += kBase64[(v >> 6) & 63];
    out += kBase64[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    if (pad) out += "==";
  } else if (i + 2 == bytes.size()) {
    const unsigned v =
        (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += kBase64[(v >> 6) & 63];
    if (pad) out += '=';
  }
  return out;
}

bool base64Decode(std::string_view text, std::string* bytes) {
  bytes->clear();
  unsigned v = 0;
  int bits = 0;
  std::size_t padding = 0;
  for (const char c : text) {
    if (c == '=') {
      ++padding;
      continue;
    }
    const char* p = std::strchr(kBase64, c);
    if (c == '\0' || p == nullptr || padding > 0) return false;
    v = (v << 6) | static_cast<unsigned>(p - kBase64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes->push_back(static_cast<char>((v >> bits) & 0xff));
    }
  }
  return padding <= 2 && bits < 6;
}

std::string knownHostsName(const std::string& host, int port) {
  return port == 22 ? lower(host) : "[" + lower(host) + "]:" + std::to_string(port);
}

std::string keyBlobType(std::string_view blob) {
  if (blob.size() < 4) return {};
  const std::size_t n = (static_cast<unsigned char>(blob[0]) << 24) |
                        (static_cast<unsigned char>(blob[1]) << 16) |
                        (static_cast<unsigned char>(blob[2]) << 8) | static_cast<unsigned char>(blob[3]);
  if (n > blob.size() - 4) return {};
  return std::string(blob.substr(4, n));
}

std::string fingerprintSha256(std::string_view key_blob) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(key_blob.data(), key_blob.size(), digest, &len, EVP_sha256(), nullptr);
  return "SHA256:" +
         base64Encode(std::string_view(reinterpret_cast<const char*>(digest), len), /*pad=*/false);
}

namespace {

// One usable line of a known_hosts file.
struct Entry {
  const std::string* file;
  int line;
  bool revoked;            // an @revoked line (its host field is not checked)
  std::string host_field;  // patterns or a hashed name
  std::string key_type;    // as written
  std::string blob;        // the decoded key
};

// Calls `visit` for every line with a key, in file order (comments,
// @cert-authority and malformed lines skipped, as ssh does); stops when it
// returns false.
Status forEachEntry(const std::vector<std::string>& files, const std::function<bool(const Entry&)>& visit) {
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) {
      if (errno == ENOENT || !std::filesystem::exists(file)) continue;
      return Status::ioError("known_hosts " + file + ": cannot read: " + std::strerror(errno));
    }
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::istringstream fields(line);
      std::string first, key_text;
      Entry e{&file, number, false, {}, {}, {}};
      if (!(fields >> first) || first[0] == '#') continue;
      std::string marker;
      if (first[0] == '@') {
        marker = first;
        if (!(fields >> e.host_field)) continue;
      } else {
        e.host_field = first;
      }
      if (!(fields >> e.key_type >> key_text)) continue;
      if (!marker.empty() && marker != "@revoked") continue;  // @cert-authority: no certificates here
      if (!base64Decode(key_text, &e.blob)) continue;
      e.revoked = marker == "@revoked";
      if (!visit(e)) return Status::ok();
    }
  }
  return Status::ok();
}

StoredHostKey storedKey(const Entry& e) {
  return {keyBlobType(e.blob), fingerprintSha256(e.blob), *e.file, e.line};
}

}  // namespace

StatusOr<KnownHostResult> checkKnownHost(const std::vector<std::string>& files, const std::string& host,
                                         int port, std::string_view key_blob) {
  const std::string name = knownHostsName(host, port);
  const std::string type = keyBlobType(key_blob);
  KnownHostResult known, changed, revoked;
  std::vector<StoredHostKey> others;
  Status s = forEachEntry(files, [&](const Entry& e) {
    if (e.revoked) {
      if (e.blob != key_blob) return true;
      revoked.kind = KnownHostResult::Kind::kRevoked;  // revoked for every host
      revoked.file = *e.file;
      revoked.line = e.line;
      return false;
    }
    if (!hostFieldMatches(e.host_field, name)) return true;
    if (e.blob == key_blob) {
      if (known.line == 0) {
        known.kind = KnownHostResult::Kind::kKnown;
        known.file = *e.file;
        known.line = e.line;
      }
    } else if (keyBlobType(e.blob) == type) {
      if (changed.line == 0) {
        changed.kind = KnownHostResult::Kind::kChanged;
        changed.file = *e.file;
        changed.line = e.line;
        changed.stored_key_type = e.key_type;
        changed.stored_fingerprint = fingerprintSha256(e.blob);
      }
    } else {
      others.push_back(storedKey(e));
    }
    return true;
  });
  if (!s.isOk()) return s;
  if (revoked.line != 0) return revoked;
  if (known.line != 0) return known;
  if (changed.line != 0) return changed;
  KnownHostResult result;
  if (!others.empty()) {
    result.kind = KnownHostResult::Kind::kOtherType;
    result.other_keys = std::move(others);
  }
  return result;
}

StatusOr<std::vector<StoredHostKey>> storedHostKeys(const std::vector<std::string>& files,
                                                    const std::string& host, int port) {
  const std::string name = knownHostsName(host, port);
  std::vector<StoredHostKey> keys;
  Status s = forEachEntry(files, [&](const Entry& e) {
    if (!e.revoked && hostFieldMatches(e.host_field, name)) keys.push_back(storedKey(e));
    return true;
  });
  if (!s.isOk()) return s;
  return keys;
}

std::string hostKeyAlgorithmsPreferring(const std::vector<StoredHostKey>& stored) {
  // libssh 0.10's default host-key algorithms without certificates (it offers
  // none): each with the key type it verifies.
  static const std::pair<const char*, const char*> kAlgorithms[] = {
      {"ssh-ed25519", "ssh-ed25519"},
      {"ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521"},
      {"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384"},
      {"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256"},
      {"sk-ssh-ed25519@openssh.com", "sk-ssh-ed25519@openssh.com"},
      {"sk-ecdsa-sha2-nistp256@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com"},
      {"rsa-sha2-512", "ssh-rsa"},
      {"rsa-sha2-256", "ssh-rsa"},
  };
  std::string preferred, rest;
  for (const auto& [algorithm, key_type] : kAlgorithms) {
    const std::string_view type = key_type;  // clang 14 (the fuzz tree) cannot capture a structured binding
    const bool known =
        std::any_of(stored.begin(), stored.end(), [&](const StoredHostKey& k) { return k.type == type; });
    std::string& list = known ? preferred : rest;
    list += (list.empty() ? "" : ",") + std::string(algorithm);
  }
  return preferred.empty() ? rest : rest.empty() ? preferred : preferred + "," + rest;
}

Status appendKnownHost(const std::string& file, const std::string& host, int port,
                       std::string_view key_blob) {
  const std::string type = keyBlobType(key_blob);
  if (type.empty())
    return Status::invalidArgument("known_hosts " + file + ": the key for " + host + " is malformed");
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  if (!dir.empty() && !std::filesystem::exists(dir)) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return Status::ioError("known_hosts " + file + ": cannot create " + dir.string() + ": " + ec.message());
    chmod(dir.c_str(), 0700);
  }
  const std::string line = knownHostsName(host, port) + " " + type + " " + base64Encode(key_blob) + "\n";
  const int fd = open(file.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status::ioError("known_hosts " + file + ": cannot open for writing: " + std::strerror(errno));
  // A file that does not end in a newline would glue our line to its last one.
  struct stat st {};
  std::string text = line;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    char last = '\n';
    if (pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n') text = "\n" + line;
  }
  const ssize_t n = write(fd, text.data(), text.size());
  const int saved = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return Status::ioError("known_hosts " + file + ": cannot write: " + std::strerror(saved));
  }
  return Status::ok();
}

}  // namespace fs::app::remote

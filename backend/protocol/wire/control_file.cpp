#include "backend/protocol/wire/control_file.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/json_fields.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::protocol {

namespace stdfs = std::filesystem;

namespace {

constexpr std::array<std::pair<ControlVerb, std::string_view>, 5> kVerbs = {{
    {ControlVerb::kStop, "stop"},
    {ControlVerb::kKill, "kill"},
    {ControlVerb::kPause, "pause"},
    {ControlVerb::kResume, "resume"},
    {ControlVerb::kCheckpoint, "checkpoint"},
}};

// The raw on-disk record; `v` is checked before anything else is read.
struct ControlRecord {
  std::string v;
  ControlCommand c;
};

// Lives beside ControlRecord so argument-dependent lookup finds it.
template <class V>
void describe(V& v, ControlRecord& r) {
  v.req("v", r.v);
  v.req("seq", r.c.seq);
  v.req("verb", r.c.verb);
  v.req("issued_at", r.c.issued_at);
  v.req("issuer", r.c.issuer);
  v.opt("args", r.c.args);
}

// Reads a file already opened by listControl; errors name `path`.
StatusOr<std::string> readOpened(int fd, const stdfs::path& path, std::size_t size) {
  std::string text(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, text.data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::ioError("cannot read " + path.string() + ": " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return text;
}

// Opens, checks and decodes one candidate; NotFound when it vanished meanwhile.
StatusOr<ControlCommand> loadCandidate(const stdfs::path& path, const ControlFileName& name, uid_t owner) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return Status::notFound(path.string() + " vanished");
    if (err == ELOOP)
      return Status::invalidArgument(path.string() + " is a symbolic link; expected a regular file");
    return Status::ioError("cannot open " + path.string() + ": " + std::strerror(err));
  }
  struct stat st {};
  StatusOr<std::string> text = Status::ioError("cannot stat " + path.string());
  if (::fstat(fd, &st) != 0) {
    text = Status::ioError("cannot stat " + path.string() + ": " + std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    text = Status::invalidArgument(path.string() + " is not a regular file");
  } else if (st.st_uid != owner) {
    text = Status::invalidArgument(path.string() + " is owned by uid " + std::to_string(st.st_uid) +
                                   " but the run directory by uid " + std::to_string(owner) +
                                   "; control commands are only accepted from the run's owner");
  } else if (static_cast<std::uint64_t>(st.st_size) > kMaxControlFileBytes) {
    text = Status::invalidArgument(path.string() + " is " + std::to_string(st.st_size) +
                                   " bytes; expected at most " + std::to_string(kMaxControlFileBytes));
  } else {
    text = readOpened(fd, path, static_cast<std::size_t>(st.st_size));
  }
  ::close(fd);
  if (!text) return text.status();
  auto cmd = decodeControl(text.value(), path.string());
  if (!cmd) return cmd.status();
  if (cmd->seq != name.seq || cmd->verb != name.verb) {
    return Status::invalidArgument(path.string() + " holds seq " + std::to_string(cmd->seq) + " verb '" +
                                   std::string(toString(cmd->verb)) + "' but its name says seq " +
                                   std::to_string(name.seq) + " verb '" + std::string(toString(name.verb)) +
                                   "'; expected them to match");
  }
  return cmd;
}

// Highest seq named by an entry of `dir` (0 when none); missing dir is fine.
StatusOr<std::uint64_t> maxSeqIn(const stdfs::path& dir) {
  std::error_code ec;
  stdfs::directory_iterator it(dir, ec), end;
  if (ec == std::errc::no_such_file_or_directory) return std::uint64_t{0};
  if (ec) return Status::ioError("cannot list " + dir.string() + ": " + ec.message());
  std::uint64_t max = 0;
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::ioError("cannot list " + dir.string() + ": " + ec.message());
    if (auto seq = seqOfControlEntry(it->path().filename().string())) max = std::max(max, *seq);
  }
  return max;
}

bool isDecimal(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

std::optional<std::uint64_t> parseDecimalSeq(std::string_view digits) {
  if (!isDecimal(digits)) return std::nullopt;
  std::uint64_t seq = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return seq;
}

}  // namespace

std::string_view toString(ControlVerb v) {
  for (const auto& [e, name] : kVerbs) {
    if (e == v) return name;
  }
  return "?";
}

bool parseEnum(std::string_view text, ControlVerb* out) {
  for (const auto& [e, name] : kVerbs) {
    if (name == text) {
      *out = e;
      return true;
    }
  }
  return false;
}

std::string_view enumChoices(ControlVerb) {
  return "stop|kill|pause|resume|checkpoint";
}

std::string controlFileName(std::uint64_t seq, ControlVerb verb) {
  return std::to_string(seq) + "-" + std::string(toString(verb)) + ".json";
}

StatusOr<ControlFileName> parseControlFileName(std::string_view name) {
  auto bad = [&](const std::string& why) {
    return Status::invalidArgument("control file name '" + std::string(name) + "' " + why +
                                   "; expected <seq>-<verb>.json, e.g. 3-pause.json");
  };
  if (!name.ends_with(".json")) return bad("does not end in .json");
  std::string_view stem = name.substr(0, name.size() - 5);
  auto dash = stem.find('-');
  if (dash == std::string_view::npos) return bad("has no '-'");
  std::string_view digits = stem.substr(0, dash), verb = stem.substr(dash + 1);
  ControlFileName out;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return bad("does not start with a decimal seq");
  }
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out.seq);
  if (ec != std::errc() || p != digits.data() + digits.size()) return bad("has a seq out of range");
  if (!parseEnum(verb, &out.verb)) {
    return bad("has unknown verb '" + std::string(verb) +
               "' (known: " + std::string(enumChoices(ControlVerb{})) + ")");
  }
  return out;
}

std::string encodeControl(const ControlCommand& c) {
  ControlRecord r{std::string(kControlSchemaVersion), c};
  nlohmann::json j = json_fields::toJson(r);
  if (j.contains("args") && j["args"].is_object() && j["args"].empty()) j.erase("args");
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

StatusOr<ControlCommand> decodeControl(std::string_view text, std::string_view source) {
  std::string src(source);
  auto parsed = json_fields::parseObject(text, src);
  if (!parsed) return parsed.status();
  nlohmann::json& obj = parsed.value();
  auto v = obj.find("v");
  if (v == obj.end()) return Status::corruption(src + ": missing required field 'v' (schema version)");
  if (!v->is_string())
    return Status::corruption(src + ": field 'v' is " + json_fields::brief(*v) + ", expected a string");
  auto version = parseSchemaVersion(v->get_ref<const std::string&>());
  if (!version) return Status::corruption(src + ": " + version.status().message());
  Status compatible = checkSchemaVersion(version.value(), {kControlSchemaMajor, kControlSchemaMinor}, src);
  if (!compatible) return compatible;
  ControlRecord r;
  std::string error = json_fields::readRecord(obj, r);
  if (!error.empty()) return Status::corruption(src + ": " + error);
  if (!r.c.args.is_object()) {
    return Status::corruption(src + ": field 'args' is " + json_fields::brief(r.c.args) +
                              ", expected an object");
  }
  return r.c;
}

StatusOr<std::uint64_t> nextControlSeq(const stdfs::path& run_dir) {
  RunDir dir(run_dir);
  std::uint64_t max = 0;
  for (const stdfs::path& d : {dir.controlDir(), dir.controlDoneDir(), dir.controlClaimDir()}) {
    auto seq = maxSeqIn(d);
    if (!seq) return seq.status();
    max = std::max(max, seq.value());
  }
  return max + 1;
}

std::optional<std::uint64_t> seqOfControlEntry(std::string_view name) {
  if (isDecimal(name)) return parseDecimalSeq(name);  // a claim
  // done/ may hold "<seq>-<verb>.json.<n>" for a name taken twice: the seq is what counts.
  if (auto json = name.rfind(".json."); json != std::string_view::npos && isDecimal(name.substr(json + 6))) {
    name = name.substr(0, json + 5);
  }
  auto parsed = parseControlFileName(name);
  if (!parsed) return std::nullopt;
  return parsed->seq;
}

StatusOr<std::uint64_t> claimControlSeq(const stdfs::path& run_dir, std::uint64_t from) {
  const stdfs::path claims = RunDir(run_dir).controlClaimDir();
  if (::mkdir(claims.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::ioError("cannot create " + claims.string() + ": " + std::strerror(errno));
  }
  // Claims are made inside the directory opened here, never through a symbolic link.
  const int dir = ::open(claims.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) {
    const int err = errno;
    if (err == ELOOP || err == ENOTDIR) {
      return Status::invalidArgument(claims.string() +
                                     " is not a directory (a symbolic link or a file); expected the "
                                     "directory of control seq claims");
    }
    return Status::ioError("cannot open " + claims.string() + ": " + std::strerror(err));
  }
  constexpr std::uint64_t kMaxTries = 1000;
  StatusOr<std::uint64_t> out =
      Status::ioError("cannot claim a control seq in " + claims.string() + ": seqs " + std::to_string(from) +
                      " to " + std::to_string(from + kMaxTries - 1) + " are all claimed");
  for (std::uint64_t seq = std::max<std::uint64_t>(from, 1); seq - from < kMaxTries; ++seq) {
    const std::string name = std::to_string(seq);
    const int fd = ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      out = seq;
      break;
    }
    if (errno != EEXIST) {
      out = Status::ioError("cannot claim seq " + name + ": cannot create " + (claims / name).string() +
                            ": " + std::strerror(errno));
      break;
    }
  }
  ::close(dir);
  return out;
}

StatusOr<bool> writeControlFile(const stdfs::path& run_dir, const ControlCommand& c) {
  if (!c.args.is_object()) {
    return Status::invalidArgument("control command args is " + json_fields::brief(c.args) +
                                   ", expected an object");
  }
  stdfs::path target = RunDir(run_dir).controlDir() / controlFileName(c.seq, c.verb);
  AtomicWriteOptions options;
  options.mode = 0600;  // commands are the owner's business
  return atomicCreateFile(target, encodeControl(c), options);
}

StatusOr<ControlCommand> issueControl(const stdfs::path& run_dir, ControlVerb verb, nlohmann::json args) {
  return issueControl(run_dir, verb, std::move(args), currentUserName(), unixMillisNow());
}

StatusOr<ControlCommand> issueControl(const stdfs::path& run_dir, ControlVerb verb, nlohmann::json args,
                                      std::string issuer, std::int64_t issued_at_ms) {
  ControlCommand c{0, verb, issued_at_ms, std::move(issuer), std::move(args)};
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto next = nextControlSeq(run_dir);
    if (!next) return next.status();
    auto seq = claimControlSeq(run_dir, next.value());
    if (!seq) return seq.status();
    c.seq = seq.value();
    auto written = writeControlFile(run_dir, c);
    if (!written) return written.status();
    if (written.value()) return c;
    // An unclaimed writer (an older build) wrote this very name: claim another seq.
  }
  return Status::ioError("cannot issue a control command in " + RunDir(run_dir).controlDir().string() +
                         ": every seq tried was taken by concurrent clients");
}

StatusOr<ControlListing> listControl(const stdfs::path& run_dir) {
  RunDir dir(run_dir);
  struct stat root {};
  if (::stat(run_dir.c_str(), &root) != 0) {
    return Status::ioError("cannot stat run directory " + run_dir.string() + ": " + std::strerror(errno));
  }
  ControlListing out;
  std::error_code ec;
  stdfs::directory_iterator it(dir.controlDir(), ec), end;
  if (ec == std::errc::no_such_file_or_directory) return out;
  if (ec) return Status::ioError("cannot list " + dir.controlDir().string() + ": " + ec.message());
  std::map<std::string, ControlFileName> candidates;  // by name: deterministic order
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::ioError("cannot list " + dir.controlDir().string() + ": " + ec.message());
    std::string name = it->path().filename().string();
    if (name.starts_with('.')) continue;  // temporaries and hidden files
    if (name == kControlDoneDirName && it->is_directory(ec)) continue;
    auto parsed = parseControlFileName(name);
    if (!parsed) {
      out.rejected.push_back(
          {it->path(), Status::invalidArgument(it->path().string() + ": " + parsed.status().message())});
      continue;
    }
    candidates.emplace(name, parsed.value());
  }
  std::map<std::pair<std::uint64_t, ControlVerb>, stdfs::path> seen_commands;
  for (const auto& [name, parsed] : candidates) {
    stdfs::path path = dir.controlDir() / name;
    auto cmd = loadCandidate(path, parsed, root.st_uid);
    if (!cmd) {
      if (cmd.status().code() != Status::Code::kNotFound) out.rejected.push_back({path, cmd.status()});
      continue;
    }
    // One seq with two verbs is two commands from colliding unclaimed writers: both stay.
    auto [seen, fresh] = seen_commands.emplace(std::pair{parsed.seq, parsed.verb}, path);
    if (!fresh) {
      out.rejected.push_back(
          {path, Status::invalidArgument(path.string() + " repeats seq " + std::to_string(parsed.seq) +
                                         " and verb '" + std::string(toString(parsed.verb)) + "' of " +
                                         seen->second.filename().string() + "; expected each command once")});
      continue;
    }
    out.pending.push_back({std::move(cmd).value(), path});
  }
  std::sort(out.pending.begin(), out.pending.end(), [](const PendingControl& a, const PendingControl& b) {
    if (a.command.seq != b.command.seq) return a.command.seq < b.command.seq;
    return a.path.filename() < b.path.filename();
  });
  std::sort(out.rejected.begin(), out.rejected.end(), [](const RejectedControl& a, const RejectedControl& b) {
    return a.path.filename() < b.path.filename();
  });
  return out;
}

StatusOr<stdfs::path> moveControlToDone(const stdfs::path& run_dir, const stdfs::path& file, WriteEnv* env) {
  RunDir dir(run_dir);
  if (Status s = createDirsDurably(writeEnvOr(env), dir.controlDoneDir()); !s) return s;
  std::string name = file.filename().string();
  for (int n = 0; n < 1000; ++n) {
    stdfs::path target = dir.controlDoneDir() / (n == 0 ? name : name + "." + std::to_string(n));
    auto moved = renameNoReplace(file, target, env);
    if (!moved) return moved.status();
    if (!moved.value()) continue;
    Status s = fsyncDir(dir.controlDoneDir(), env);
    if (s) s = fsyncDir(parentDir(file), env);
    if (!s) return s;
    return target;
  }
  return Status::ioError("cannot move " + file.string() + " to " + dir.controlDoneDir().string() +
                         ": too many files of that name there");
}

std::string currentUserName() {
  std::array<char, 4096> buf{};
  passwd pw{};
  passwd* result = nullptr;
  if (::getpwuid_r(::geteuid(), &pw, buf.data(), buf.size(), &result) == 0 && result && result->pw_name) {
    return result->pw_name;
  }
  if (const char* user = std::getenv("USER"); user && *user) return user;
  return "uid" + std::to_string(::geteuid());
}

}  // namespace fs::protocol

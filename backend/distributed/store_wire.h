// The wire of the run's store: what store_client.h sends and store_server.h
// answers. Internal to backend/distributed; both sides encode and decode with the
// Writer and Reader below, so the format is defined once, here.
//
// NOTE [Store wire]: every message is a frame, a u32 body length
// (little-endian) and the body. A request body is a u8 op and its fields, a
// reply body a u8 `Reply` and its fields. Fields: bytes = u32 length + the
// bytes; i64 = 8 bytes little-endian; list = u32 count + that many bytes.
//
//   op            request fields                 reply
//   kHello        bytes kMagic                   kOk
//   kSet          key, value                     kOk
//   kGet          key, i64 wait ms (< 0: none)   kOk value | kTimeout list(key)
//   kAdd          key, i64 delta                 kOk i64 sum | kError text
//   kCompareSet   key, expected, desired         kOk value (c10d's semantics)
//   kDeleteKey    key                            kOk i64 (1 deleted, 0 absent)
//   kCheck        list keys                      kOk i64 (1 all present)
//   kNumKeys      -                              kOk i64
//   kWait         list keys, i64 wait ms         kOk | kTimeout list(missing keys)
//
// A connection starts with kHello; a client sends its next request only
// after the reply to the last one. Keys are at most kMaxKeyBytes, values
// kMaxValueBytes, a frame kMaxFrameBytes: the server refuses (kError, then
// closes the connection) a frame whose header announces more, before reading
// its body. The first frame must be the hello, a body of at most
// kMaxHelloBodyBytes: the server reads no more than kMaxHelloFrameBytes of
// a connection until its hello is complete (NOTE [Store bounds] in
// store_server.h). A set that would take the store past its size limit is
// answered kError and the connection stays open. It is our own protocol,
// not c10d TCPStore's: PyTorch 2.x changed TCPStore's wire, while the
// c10d::Store interface the process groups call stayed; the magic makes
// either side of a mismatch fail with a message.
#pragma once

#include <netdb.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fs::distributed::store_wire {

inline constexpr std::string_view kMagic = "flamingo-store/1";
inline constexpr size_t kMaxKeyBytes = 4096;
inline constexpr size_t kMaxValueBytes = 8u << 20;
// Two values (compareSet) or many keys (wait / check), with room to spare.
inline constexpr size_t kMaxFrameBytes = 2 * kMaxValueBytes + (64u << 10);
inline constexpr size_t kHeaderBytes = 4;
// The hello's body: the op, the magic's length and a magic of at most 64 bytes (room for a later one).
inline constexpr size_t kMaxMagicBytes = 64;
inline constexpr size_t kMaxHelloBodyBytes = 1 + 4 + kMaxMagicBytes;
inline constexpr size_t kMaxHelloFrameBytes = kHeaderBytes + kMaxHelloBodyBytes;

enum class Op : uint8_t {
  kHello = 1,
  kSet = 2,
  kGet = 3,
  kAdd = 4,
  kCompareSet = 5,
  kDeleteKey = 6,
  kCheck = 7,
  kNumKeys = 8,
  kWait = 9,
};

enum class Reply : uint8_t { kOk = 0, kTimeout = 1, kError = 2 };

// Builds one frame.
class Writer {
 public:
  Writer() : body_(kHeaderBytes, '\0') {}
  Writer& u8(uint8_t v);
  Writer& i64(int64_t v);
  Writer& bytes(std::string_view v);
  Writer& list(const std::vector<std::string>& v);
  // The frame: header + body. The Writer is spent afterwards.
  std::string frame();

 private:
  std::string body_;
};

// Reads the fields of one body; every read is bounds-checked and fails (returns
// false) on a truncated field or one over its limit.
class Reader {
 public:
  explicit Reader(std::string_view body) : in_(body) {}
  bool u8(uint8_t* v);
  bool i64(int64_t* v);
  bool bytes(std::string* v, size_t limit);
  bool list(std::vector<std::string>* v, size_t itemLimit);
  bool atEnd() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

// The body length a frame header announces (`header` holds kHeaderBytes).
uint32_t bodyLength(const char* header);

// The TCP addresses `host`:`port` resolves to (any family, numeric port), for the
// server's bind and the client's connect; null with `error` set to the resolver's text.
using AddressList = std::unique_ptr<addrinfo, void (*)(addrinfo*)>;
AddressList resolveTcp(const std::string& host, int port, std::string* error);

}  // namespace fs::distributed::store_wire

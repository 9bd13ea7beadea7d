// A client of the run's store (store_server.h): the c10d::Store that the
// process groups (Gloo, NCCL), PrefixStore, the pre-flight, the heartbeat
// and the shared-memory offer use. One TCP connection; NOTE [Store wire].
//
// Semantics are c10d's (TCPStore's): set overwrites; get waits for a
// missing key; add keeps a decimal integer and returns the sum; compareSet
// as documented on Store; deleteKey says whether the key existed; wait
// returns once every key has been set. watchKey is not offered (nothing in
// Flamingo or the process groups it creates uses it).
//
// Timeouts: the constructor's `timeout` is the store's (getTimeout()):
// connecting retries refused connections, and connections closed before
// the hello was answered (NOTE [Store bounds] in store_server.h), for at
// most that long; a hello answered with an error fails at once; get and
// wait(keys) wait at most that long; wait(keys, t) waits t (kNoTimeout,
// i.e. 0: without bound, as c10d defines it). The server enforces those
// waits and answers with the keys still missing, named in the
// c10d::TimeoutError thrown here. Any reply is awaited at most the wait plus
// the store timeout; past that (rank 0's host gone silent) the connection
// is given up. Errors throw c10::DistStoreError / c10d::TimeoutError naming the
// store's address; after a lost connection every later call throws too.
// clone() opens a new connection to the same store with the same timeout (the
// process groups ask for one per thread that talks to the store).
//
// Thread-safety: calls are serialised on the one connection, so a blocking
// get or wait holds it for its duration; a thread that must not wait behind
// another (the heartbeat) uses a client of its own.
#pragma once

#include <torch/csrc/distributed/c10d/exception.h>

#include <chrono>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

namespace fs::distributed {

class StoreClient : public c10d::Store {
 public:
  // Connects to `address`:`port`. REQUIRES: timeout > 0.
  StoreClient(std::string address, int port, std::chrono::milliseconds timeout);
  ~StoreClient() override;
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expectedValue,
                                  const std::vector<uint8_t>& desiredValue) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;
  c10::intrusive_ptr<c10d::Store> clone() override;

  // "host:port" as given.
  const std::string& where() const { return where_; }

 private:
  struct Answer;
  // Sends one request and reads its reply; the server may take `serverWait` before answering.
  // REQUIRES: mu_ held.
  Answer exchange(const std::string& frame, std::chrono::milliseconds serverWait, bool unbounded);
  [[noreturn]] void lose(const std::string& why);

  std::mutex mu_;
  const std::string address_;
  const int port_;
  const std::string where_;
  int fd_ = -1;
  std::string lost_;  // why the connection is gone; empty while it works
};

}  // namespace fs::distributed

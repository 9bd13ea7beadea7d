// Random RunConfigs drawn through the schema, for property tests: every
// field gets a value allowed by its declaration, strings are chosen to be
// hard for YAML and shells (keywords, numbers, quotes, braces, unicode).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/schema.h"

namespace fs::test {

inline const std::vector<std::string>& trickyStrings() {
  static const std::vector<std::string> s = {"plain",
                                             "true",
                                             "no",
                                             "null",
                                             "~",
                                             "123",
                                             "1e5",
                                             "-dash",
                                             "with space",
                                             "a: b",
                                             "#hash",
                                             "x # y",
                                             "quote\"d",
                                             "it's",
                                             "/data/{00000..00099}.tar",
                                             "pipe:aws s3 cp s3://b/{0..9}.tar -",
                                             "π ünïcode",
                                             "[bracket",
                                             "{brace}",
                                             "*star",
                                             "&anchor",
                                             "!tag",
                                             "%pct",
                                             "@at",
                                             "`tick`",
                                             "back\\slash",
                                             ""};
  return s;
}

class RandomConfig {
 public:
  explicit RandomConfig(uint32_t seed) : rng_(seed) {}

  protocol::RunConfig next() {
    protocol::RunConfig c = protocol::defaultRunConfig();
    fill(protocol::runConfigSchema(), &c);
    return c;
  }

 private:
  void fill(const protocol::SectionSpec& s, void* obj) {
    for (const auto& e : s.entries) {
      switch (e.kind) {
        case protocol::EntrySpec::Kind::kField:
          if (e.key != "schema_version") e.set(obj, value(e));
          break;
        case protocol::EntrySpec::Kind::kSection:
          fill(*e.section, e.child(obj));
          break;
        case protocol::EntrySpec::Kind::kList: {
          const size_t n = 1 + rng_() % 3;
          e.resize(obj, n);
          for (size_t i = 0; i < n; ++i) fill(*e.section, e.element(obj, i));
          break;
        }
      }
    }
  }

  protocol::Value value(const protocol::EntrySpec& e) {
    using protocol::FieldType;
    switch (e.type) {
      case FieldType::kBool:
        return protocol::Value(rng_() % 2 == 0);
      case FieldType::kInt: {
        const int64_t lo = e.min ? static_cast<int64_t>(*e.min) : -1000;
        const int64_t hi = e.max ? static_cast<int64_t>(*e.max) : lo + 100000;
        return protocol::Value(
            lo +
            static_cast<int64_t>(rng_() % static_cast<uint64_t>(std::min<int64_t>(hi - lo, 1 << 20) + 1)));
      }
      case FieldType::kFloat: {
        const double lo = e.min.value_or(-10.0), hi = e.max.value_or(lo + 1000.0);
        std::uniform_real_distribution<double> d(lo, hi);
        return protocol::Value(d(rng_));
      }
      case FieldType::kEnum:
        return protocol::Value(e.choices[rng_() % e.choices.size()]);
      case FieldType::kString: {
        std::string s = trickyStrings()[rng_() % trickyStrings().size()];
        if (s.empty() && e.required) s = "x";
        return protocol::Value(s);
      }
      case FieldType::kStringList: {
        std::vector<std::string> v;
        for (size_t i = rng_() % 3; i > 0; --i) {
          const std::string s = trickyStrings()[rng_() % trickyStrings().size()];
          if (!s.empty()) v.push_back(s);
        }
        return protocol::Value(v);
      }
      case FieldType::kStringMap: {
        protocol::StringMap m;  // names as launch.env takes them; values hard for YAML and shells
        for (size_t i = rng_() % 3; i > 0; --i) {
          m["VAR_" + std::to_string(rng_() % 100)] = trickyStrings()[rng_() % trickyStrings().size()];
        }
        return protocol::Value(m);
      }
    }
    return protocol::Value(false);
  }

  std::mt19937 rng_;
};

}  // namespace fs::test

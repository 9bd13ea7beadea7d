// Typed builder for SectionSpec: binds entries to struct members through
// member pointers so the declaration in config_schema.cpp stays one line-ish
// per field. Internal to backend/protocol.
#pragma once

#include <type_traits>
#include <utility>

#include "backend/protocol/config/schema.h"

namespace fs::protocol::detail {

template <class M>
constexpr FieldType fieldTypeOf() {
  if constexpr (std::is_same_v<M, bool>)
    return FieldType::kBool;
  else if constexpr (std::is_integral_v<M>)
    return FieldType::kInt;
  else if constexpr (std::is_floating_point_v<M>)
    return FieldType::kFloat;
  else if constexpr (std::is_same_v<M, std::string>)
    return FieldType::kString;
  else if constexpr (std::is_same_v<M, StringMap>)
    return FieldType::kStringMap;
  else
    return FieldType::kStringList;
}

template <class M>
Value toValue(const M& m) {
  if constexpr (std::is_same_v<M, bool>)
    return Value(m);
  else if constexpr (std::is_integral_v<M>)
    return Value(static_cast<int64_t>(m));
  else if constexpr (std::is_floating_point_v<M>)
    return Value(static_cast<double>(m));
  else
    return Value(m);
}

template <class M>
M fromValue(const Value& v) {
  if constexpr (std::is_same_v<M, bool>)
    return std::get<bool>(v);
  else if constexpr (std::is_integral_v<M>)
    return static_cast<M>(std::get<int64_t>(v));
  else if constexpr (std::is_floating_point_v<M>)
    return static_cast<M>(std::get<double>(v));
  else
    return std::get<M>(v);
}

// Chained modifiers for the entry just declared.
class FieldHandle {
 public:
  explicit FieldHandle(EntrySpec& e) : e_(&e) {}
  FieldHandle& unit(std::string u) {
    e_->unit = std::move(u);
    return *this;
  }
  FieldHandle& min(double v) {
    e_->min = v;
    return *this;
  }
  FieldHandle& max(double v) {
    e_->max = v;
    return *this;
  }
  FieldHandle& range(double lo, double hi) {
    e_->min = lo;
    e_->max = hi;
    return *this;
  }
  FieldHandle& choices(std::vector<std::string> c) {
    e_->choices = std::move(c);
    e_->type = FieldType::kEnum;
    return *this;
  }
  FieldHandle& required() {
    e_->required = true;
    return *this;
  }
  FieldHandle& when(std::string cond) {
    e_->appliesWhen = std::move(cond);
    return *this;
  }

 private:
  EntrySpec* e_;
};

template <class T>
class SectionBuilder {
 public:
  SectionBuilder(SectionSpec& spec, std::string key, std::string help) : spec_(spec) {
    spec_.key = std::move(key);
    spec_.help = std::move(help);
  }

  template <class M>
  FieldHandle field(M T::*member, std::string key, std::type_identity_t<M> def, std::string help) {
    EntrySpec e;
    e.kind = EntrySpec::Kind::kField;
    e.key = std::move(key);
    e.help = std::move(help);
    e.type = fieldTypeOf<M>();
    e.defaultValue = toValue<M>(def);
    e.get = [member](const void* o) { return toValue<M>(static_cast<const T*>(o)->*member); };
    e.set = [member](void* o, const Value& v) { static_cast<T*>(o)->*member = fromValue<M>(v); };
    spec_.entries.push_back(std::move(e));
    return FieldHandle(spec_.entries.back());
  }

  template <class C>
  void section(C T::*member, const SectionSpec& child) {
    EntrySpec e;
    e.kind = EntrySpec::Kind::kSection;
    e.key = child.key;
    e.help = child.help;
    e.section = &child;
    e.child = [member](void* o) -> void* { return &(static_cast<T*>(o)->*member); };
    e.childConst = [member](const void* o) -> const void* { return &(static_cast<const T*>(o)->*member); };
    spec_.entries.push_back(std::move(e));
  }

  template <class C>
  void list(std::vector<C> T::*member, const SectionSpec& element, std::string key, std::string help,
            std::vector<std::vector<std::pair<std::string, Value>>> defaults) {
    EntrySpec e;
    e.kind = EntrySpec::Kind::kList;
    e.key = std::move(key);
    e.help = std::move(help);
    e.section = &element;
    e.size = [member](const void* o) { return (static_cast<const T*>(o)->*member).size(); };
    e.element = [member](void* o, size_t i) -> void* { return &(static_cast<T*>(o)->*member)[i]; };
    e.elementConst = [member](const void* o, size_t i) -> const void* {
      return &(static_cast<const T*>(o)->*member)[i];
    };
    const SectionSpec* elem = &element;
    e.resize = [member, elem](void* o, size_t n) {
      auto& vec = static_cast<T*>(o)->*member;
      const size_t old = vec.size();
      vec.resize(n);
      for (size_t i = old; i < n; ++i) elem->applyDefaults(&vec[i]);
    };
    e.defaultElements = std::move(defaults);
    spec_.entries.push_back(std::move(e));
  }

 private:
  SectionSpec& spec_;
};

}  // namespace fs::protocol::detail

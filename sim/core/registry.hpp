// SPDX-License-Identifier: MIT
// Registry: named factories with one-line help, filled explicitly (no static registration).
#pragma once

#include "sim/core/params.hpp"

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace dtsim {

// Maps names (as written in YAML) to factories. `make` reads the name from a Params key so
// that an unknown name is reported with file, line, the valid names and "did you mean".
template <class Product, class... Args> class Registry {
public:
  using Factory = std::function<Product(const Params&, Args...)>;
  struct Entry {
    std::string name;
    std::string help;
    Factory make;
  };

  void add(std::string name, std::string help, Factory make) {
    entries_.push_back({std::move(name), std::move(help), std::move(make)});
  }

  // Picks the entry named by `p.key` (default `def`) and builds it from `p`.
  Product make(const Params& p, const std::string& key, const std::string& def,
               Args... args) const {
    const std::string name = p.choice(key, def, names());
    return find(name)->make(p, std::forward<Args>(args)...);
  }

  const Entry* find(const std::string& name) const {
    for (const auto& e : entries_)
      if (e.name == name)
        return &e;
    return nullptr;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (const auto& e : entries_)
      v.push_back(e.name);
    return v;
  }

  void describe(std::ostream& os) const {
    for (const auto& e : entries_) {
      os << "  " << e.name;
      for (std::size_t i = e.name.size(); i < 22; ++i)
        os << ' ';
      os << e.help << '\n';
    }
  }

  const std::vector<Entry>& entries() const { return entries_; }

private:
  std::vector<Entry> entries_;
};

} // namespace dtsim

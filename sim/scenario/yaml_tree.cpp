// SPDX-License-Identifier: MIT
// yaml-cpp is used here and nowhere else.
#include "sim/scenario/yaml_tree.hpp"

#include "sim/core/errors.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

namespace dtsim {
namespace {

constexpr std::size_t kMaxFileBytes = 1 << 20;
constexpr std::size_t kMaxNodes = 100000;
constexpr int kMaxDepth = 64;

struct Converter {
  std::string name;
  int line_override = 0; // nonzero: every node gets this line (used for --set)
  std::size_t nodes = 0;

  [[noreturn]] void fail(const YAML::Mark& m, const std::string& what) const {
    throw ConfigError(name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) +
                      ": " + what);
  }

  ParamNode convert(const YAML::Node& y, int depth) {
    if (++nodes > kMaxNodes)
      fail(y.Mark(), "document expands to more than " + std::to_string(kMaxNodes) +
                         " nodes (recursive aliases?); refusing to read it");
    if (depth > kMaxDepth)
      fail(y.Mark(), "document nests deeper than " + std::to_string(kMaxDepth) + " levels");
    ParamNode n;
    n.line = line_override != 0 ? line_override : y.Mark().line + 1;
    switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      n.kind = ParamNode::Kind::Null;
      break;
    case YAML::NodeType::Scalar:
      n.kind = ParamNode::Kind::Scalar;
      n.scalar = y.Scalar();
      // yaml-cpp tags a plain scalar "?", a quoted or block one "!".
      n.quoted = y.Tag() == "!" || y.Tag() == "tag:yaml.org,2002:str";
      break;
    case YAML::NodeType::Sequence:
      n.kind = ParamNode::Kind::List;
      for (const auto& item : y)
        n.items.push_back(convert(item, depth + 1));
      break;
    case YAML::NodeType::Map:
      n.kind = ParamNode::Kind::Map;
      for (const auto& kv : y) {
        if (!kv.first.IsScalar())
          fail(kv.first.Mark(), "map keys must be plain names");
        const std::string key = kv.first.Scalar();
        if (n.find(key))
          fail(kv.first.Mark(), "duplicate key '" + key + "'");
        n.fields.emplace_back(key, convert(kv.second, depth + 1));
        // An empty value has no token of its own: yaml-cpp marks where the next one starts.
        ParamNode& value = n.fields.back().second;
        if (value.kind == ParamNode::Kind::Null && line_override == 0)
          value.line = kv.first.Mark().line + 1;
      }
      break;
    }
    return n;
  }
};

std::shared_ptr<ParamNode> to_tree(const YAML::Node& doc, const std::string& name) {
  Converter c{name};
  auto root = std::make_shared<ParamNode>(c.convert(doc, 0));
  if (root->kind == ParamNode::Kind::Null)
    throw ConfigError(name + ": the file is empty; expected a map of settings");
  if (root->kind != ParamNode::Kind::Map)
    throw ConfigError(name + ":" + std::to_string(root->line) +
                      ": expected a map of settings at the top level");
  return root;
}

// Stops a parse at the first node of a document (by throwing its line): whether a document
// holds anything, found without building it (a second document may be huge or an alias bomb).
class FirstNode : public YAML::EventHandler {
public:
  struct Found {
    int line;
  };
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { throw Found{m.line + 1}; }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    throw Found{m.line + 1};
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    throw Found{m.line + 1};
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    throw Found{m.line + 1};
  }
  void OnMapEnd() override {}
};

// Ignores every event: skips a document.
class Skip : public FirstNode {
public:
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
};

// The line where a second document's content starts, or 0 when there is none (a trailing
// "---" holds nothing to drop).
int second_document_line(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  Skip first;
  if (!parser.HandleNextDocument(first))
    return 0;
  // yaml-cpp 0.7's parser can report a next document forever without moving on some
  // malformed input (the loop in its own LoadAll never ends on ","): look at a few only.
  constexpr int kDocumentsLookedAt = 64;
  FirstNode next;
  try {
    for (int k = 0; k < kDocumentsLookedAt && parser.HandleNextDocument(next); ++k) {
    }
  } catch (const FirstNode::Found& found) {
    return found.line;
  }
  return 0;
}

YAML::Node load(const std::string& text, const std::string& name) {
  try {
    YAML::Node document = YAML::Load(text);
    // A second document ("---") would otherwise be dropped without a word.
    if (const int line = second_document_line(text))
      throw ConfigError(name + ":" + std::to_string(line) +
                        ": a second YAML document (after '---'); expected one map of settings "
                        "per file");
    return document;
  } catch (const YAML::Exception& e) {
    throw ConfigError(name + ":" + std::to_string(e.mark.line + 1) + ":" +
                      std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
  }
}

void emit(YAML::Emitter& out, const ParamNode& n) {
  switch (n.kind) {
  case ParamNode::Kind::Null:
    out << YAML::Null;
    break;
  case ParamNode::Kind::Scalar:
    out << n.scalar;
    break;
  case ParamNode::Kind::List: {
    bool flat = true;
    for (const auto& item : n.items)
      flat = flat && item.kind == ParamNode::Kind::Scalar;
    if (flat)
      out << YAML::Flow;
    out << YAML::BeginSeq;
    for (const auto& item : n.items)
      emit(out, item);
    out << YAML::EndSeq;
    break;
  }
  case ParamNode::Kind::Map:
    out << YAML::BeginMap;
    for (const auto& [k, v] : n.fields) {
      out << YAML::Key << k << YAML::Value;
      emit(out, v);
    }
    out << YAML::EndMap;
    break;
  }
}

// A quoted scalar stays quoted (a string, whatever it looks like; its commas and colons
// not read as flow syntax).
std::string double_quoted(const std::string& text) {
  std::string s = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      s += '\\';
      s += c;
    } else if (c == '\n') {
      s += "\\n";
    } else if (c == '\t') {
      s += "\\t";
    } else if (byte < 0x20 || byte == 0x7F) { // other control characters, as \xNN
      constexpr char kHex[] = "0123456789abcdef";
      s += "\\x";
      s += kHex[byte >> 4];
      s += kHex[byte & 0xF];
    } else {
      s += c;
    }
  }
  return s + '"';
}

} // namespace

std::shared_ptr<ParamNode> parse_yaml_text(const std::string& text, const std::string& name) {
  return to_tree(load(text, name), name);
}

std::shared_ptr<ParamNode> parse_yaml_file(const std::string& path) {
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    throw ConfigError(path + ": is a folder; expected a YAML file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ConfigError(path + ": cannot open the scenario file");
  std::string text;
  text.resize(kMaxFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxFileBytes)
    throw ConfigError(path + ": larger than 1 MiB; a scenario file should be a few lines");
  return parse_yaml_text(text, path);
}

void apply_override(ParamNode& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set " + assignment + ": expected key=value, e.g. --set algorithm.lr=0.1");
  const std::string path = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  Converter c{"--set " + path, -1};
  ParamNode v;
  try {
    v = c.convert(YAML::Load(value), 0);
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + path + ": cannot parse value '" + value + "': " + e.msg);
  }
  ParamNode* node = &root;
  std::size_t start = 0;
  for (;;) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (key.empty())
      throw ConfigError("--set " + path + ": empty key in the dotted path");
    if (node->kind == ParamNode::Kind::Null)
      *node = ParamNode::make_map(-1);
    if (node->kind != ParamNode::Kind::Map)
      throw ConfigError("--set " + path + ": '" + key + "' is inside a value that is not a map");
    ParamNode* child = node->find(key);
    if (!child) {
      node->fields.emplace_back(key, ParamNode::make_map(-1));
      child = &node->fields.back().second;
      child->kind = ParamNode::Kind::Null;
    }
    if (dot == std::string::npos) {
      *child = std::move(v);
      return;
    }
    node = child;
    start = dot + 1;
  }
}

std::string to_yaml(const ParamNode& root) {
  YAML::Emitter out;
  emit(out, root);
  return std::string(out.c_str()) + "\n";
}

std::string to_flow_yaml(const ParamNode& n) {
  switch (n.kind) {
  case ParamNode::Kind::Null:
    return "~";
  case ParamNode::Kind::Scalar:
    return n.quoted ? double_quoted(n.scalar) : n.scalar;
  case ParamNode::Kind::List: {
    std::string s = "[";
    for (std::size_t i = 0; i < n.items.size(); ++i)
      s += (i ? ", " : "") + to_flow_yaml(n.items[i]);
    return s + "]";
  }
  case ParamNode::Kind::Map: {
    std::string s = "{";
    for (std::size_t i = 0; i < n.fields.size(); ++i)
      s += (i ? ", " : "") + n.fields[i].first + ": " + to_flow_yaml(n.fields[i].second);
    return s + "}";
  }
  }
  return "";
}

} // namespace dtsim

#include "tests/support/fake_sysfs.h"

#include <cerrno>
#include <deque>

namespace fabric::testing {
namespace {

// Linux gives up after 40 links in one lookup (ELOOP); so does the fake.
constexpr int kMaxLinks = 40;

std::error_code Errno(int e) { return {e, std::system_category()}; }

std::deque<std::string> Components(const std::string& path) {
  std::deque<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

std::string Parent(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string Base(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const std::string& Key(const std::string& key) { return key; }
template <typename Value>
const std::string& Key(const std::pair<const std::string, Value>& entry) {
  return entry.first;
}

// The entries of `c` (a map or set keyed by path) strictly below `dir`;
// "" is the root.
template <typename C>
std::pair<typename C::const_iterator, typename C::const_iterator> Below(
    const C& c, const std::string& dir) {
  if (dir.empty()) return {c.begin(), c.end()};
  // Keys below "d" sort from "d/" up to "d0" ('0' follows '/').
  return {c.lower_bound(dir + "/"), c.lower_bound(dir + "0")};
}

template <typename C>
void EraseTree(C& c, const std::string& path) {
  c.erase(path);
  auto [from, to] = Below(c, path);
  c.erase(from, to);
}

}  // namespace

void FakeSysfs::File(const std::string& path, std::string contents) {
  files_[Place(path)] = {std::move(contents), nullptr};
}

void FakeSysfs::ComputedFile(const std::string& path,
                             std::function<std::string()> show) {
  files_[Place(path)] = {"", std::move(show)};
}

void FakeSysfs::Dir(const std::string& path) { dirs_.insert(Place(path)); }

void FakeSysfs::Link(const std::string& path, std::string target) {
  links_[Place(path)] = std::move(target);
}

void FakeSysfs::Fail(const std::string& path, int err) {
  errors_[Place(path)] = err;
}

void FakeSysfs::Remove(const std::string& path) {
  const std::string p = Place(path);
  EraseTree(files_, p);
  EraseTree(dirs_, p);
  EraseTree(links_, p);
  EraseTree(errors_, p);
}

void FakeSysfs::OnList(const std::string& path, std::function<void()> hook) {
  std::string resolved;
  Resolve(path, &resolved);
  hooks_[resolved] = std::move(hook);
}

int FakeSysfs::Reads(const std::string& path) const {
  int n = 0;
  for (const auto& call : calls_) n += call == "read " + path;
  return n;
}

int FakeSysfs::Reads() const {
  int n = 0;
  for (const auto& call : calls_) n += call.starts_with("read ");
  return n;
}

ReadResult FakeSysfs::Read(const std::string& path) const {
  calls_.push_back("read " + path);
  std::string p;
  if (!Resolve(path, &p)) return Errno(ELOOP);
  if (auto e = errors_.find(p); e != errors_.end()) return Errno(e->second);
  if (auto f = files_.find(p); f != files_.end()) {
    return f->second.show ? f->second.show() : f->second.data;
  }
  return Errno(MissingErrno(p, Kind::kFile));
}

std::optional<std::vector<std::string>> FakeSysfs::List(
    const std::string& path, std::error_code* error) const {
  calls_.push_back("list " + path);
  std::string p;
  std::error_code failed;
  if (!Resolve(path, &p)) {
    failed = Errno(ELOOP);
  } else if (auto e = errors_.find(p); e != errors_.end()) {
    failed = Errno(e->second);
  } else if (KindOf(p) != Kind::kDir) {
    failed = Errno(MissingErrno(p, Kind::kDir));
  }
  if (failed) {
    if (error) *error = failed;
    return std::nullopt;
  }
  std::set<std::string> names;
  const std::size_t skip = p.empty() ? 0 : p.size() + 1;
  auto collect = [&](const auto& c) {
    auto [it, to] = Below(c, p);
    while (it != to) {
      const std::string& key = Key(*it);
      const auto slash = key.find('/', skip);
      names.insert(key.substr(skip, slash - skip));
      // Skip the rest of that child's subtree.
      it = slash == std::string::npos
               ? std::next(it)
               : c.lower_bound(key.substr(0, slash) + "0");
    }
  };
  collect(files_);
  collect(dirs_);
  collect(links_);
  collect(errors_);
  // The hook may change the tree, so it runs once the listing is taken.
  if (auto h = hooks_.find(p); h != hooks_.end()) h->second();
  return std::vector<std::string>(names.begin(), names.end());
}

std::string FakeSysfs::ReadLink(const std::string& path) const {
  calls_.push_back("readlink " + path);
  std::string dir;
  if (!Resolve(Parent(path), &dir)) return {};
  auto it = links_.find(Join(dir, Base(path)));
  return it == links_.end() ? std::string() : it->second;
}

bool FakeSysfs::IsDirectory(const std::string& path) const {
  calls_.push_back("isdir " + path);
  std::string p;
  return Resolve(path, &p) && KindOf(p) == Kind::kDir;
}

int FakeSysfs::MissingErrno(const std::string& p, Kind want) const {
  const Kind kind = KindOf(p);
  if (kind == Kind::kDir) return EISDIR;
  if (kind == Kind::kFile && want == Kind::kDir) return ENOTDIR;
  // A file where a directory should be on the way ("state/x").
  for (std::string up = Parent(p); !up.empty(); up = Parent(up)) {
    if (files_.contains(up)) return ENOTDIR;
  }
  return ENOENT;
}

std::string FakeSysfs::Place(const std::string& path) const {
  std::string dir;
  if (!Resolve(Parent(path), &dir)) dir = Parent(path);
  return Join(dir, Base(path));
}

bool FakeSysfs::Resolve(const std::string& path, std::string* out) const {
  // Without links a plain path is its own answer (most tests, every call).
  if (links_.empty() && path.find('.') == std::string::npos &&
      path.find("//") == std::string::npos && !path.starts_with('/') &&
      !path.ends_with('/')) {
    *out = path;
    return true;
  }
  std::deque<std::string> rest = Components(path);
  std::string at;
  int links = 0;
  while (!rest.empty()) {
    std::string name = std::move(rest.front());
    rest.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      at = Parent(at);
      continue;
    }
    const std::string next = Join(at, name);
    auto link = links_.find(next);
    if (link == links_.end()) {
      at = next;
      continue;
    }
    if (++links > kMaxLinks) return false;
    // A relative target continues from the link's directory; an absolute
    // one from the fake's root.
    if (link->second.starts_with('/')) at.clear();
    auto target = Components(link->second);
    rest.insert(rest.begin(), target.begin(), target.end());
  }
  *out = at;
  return true;
}

FakeSysfs::Kind FakeSysfs::KindOf(const std::string& p) const {
  if (files_.contains(p)) return Kind::kFile;
  if (p.empty() || dirs_.contains(p)) return Kind::kDir;
  auto nonempty = [&](const auto& c) {
    auto [from, to] = Below(c, p);
    return from != to;
  };
  if (nonempty(files_) || nonempty(dirs_) || nonempty(links_) ||
      nonempty(errors_)) {
    return Kind::kDir;
  }
  return Kind::kNone;
}

}  // namespace fabric::testing

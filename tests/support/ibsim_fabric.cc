#include "tests/support/ibsim_fabric.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;

bool OnPath(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  dirs += ":/usr/sbin:/sbin";
  std::stringstream in(dirs);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/" + tool).c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

// Our environment plus `extra` (overriding same-named entries).
std::vector<std::string> MergedEnv(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& x : extra) {
      if (x.compare(0, name.size() + 1, name + "=") == 0) overridden = true;
    }
    if (!overridden) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// posix_spawnp with stdin/stdout/stderr from the given fds (-1: /dev/null),
// in directory `cwd`: umad2sim writes its fake sysfs as ./sys-<pid> there.
pid_t Spawn(std::vector<std::string> argv, std::vector<std::string> env,
            int in_fd, int out_fd, int err_fd, const std::string& cwd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  const int fds[3] = {in_fd, out_fd, err_fd};
  for (int i = 0; i < 3; ++i) {
    if (fds[i] >= 0) {
      posix_spawn_file_actions_adddup2(&actions, fds[i], i);
    } else {
      posix_spawn_file_actions_addopen(&actions, i, "/dev/null",
                                       i == 0 ? O_RDONLY : O_WRONLY, 0);
    }
  }
  auto args = CStrings(argv);
  auto envp = CStrings(env);
  pid_t pid = -1;
  if (posix_spawnp(&pid, args[0], &actions, nullptr, args.data(),
                   envp.data()) != 0) {
    pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

void KillAndReap(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Reads `fd` until `until` appears in what was read or `deadline` passes.
std::string ReadUntil(int fd, const std::string& until,
                      std::chrono::steady_clock::time_point deadline) {
  std::string got;
  while (got.find(until) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

}  // namespace

std::string FatTreeNetfile(int switches, int hcas) {
  switches = std::max(1, switches);
  const int spines = switches == 1 ? 0 : std::max(1, switches / 4);
  const int leaves = switches - spines;
  std::vector<std::vector<int>> leaf_hcas(leaves);
  for (int h = 0; h < hcas; ++h) leaf_hcas[h % leaves].push_back(h);
  std::size_t most = 0;
  for (const auto& l : leaf_hcas) most = std::max(most, l.size());
  const int leaf_ports = static_cast<int>(most) + spines;
  std::ostringstream out;
  // HCAs first: ibsim attaches a client without SIM_HOST to the first node.
  for (int h = 0; h < hcas; ++h) {
    const int leaf = h % leaves;
    const int port = h / leaves + 1;
    out << "Hca\t1 \"hca" << h << "\"\n[1]\t\"leaf" << leaf << "\"[" << port
        << "]\n\n";
  }
  for (int l = 0; l < leaves; ++l) {
    out << "Switch\t" << std::max(leaf_ports, 1) << " \"leaf" << l << "\"\n";
    for (std::size_t i = 0; i < leaf_hcas[l].size(); ++i) {
      out << "[" << i + 1 << "]\t\"hca" << leaf_hcas[l][i] << "\"[1]\n";
    }
    for (int s = 0; s < spines; ++s) {
      out << "[" << most + 1 + s << "]\t\"spine" << s << "\"[" << l + 1
          << "]\n";
    }
    out << "\n";
  }
  for (int s = 0; s < spines; ++s) {
    out << "Switch\t" << leaves << " \"spine" << s << "\"\n";
    for (int l = 0; l < leaves; ++l) {
      out << "[" << l + 1 << "]\t\"leaf" << l << "\"[" << most + 1 + s << "]\n";
    }
    out << "\n";
  }
  return out.str();
}

std::string RandomNetfile(unsigned seed, int switches, int hcas,
                          int extra_links) {
  switches = std::max(1, switches);
  std::mt19937 rng(seed);
  auto pick = [&](int n) {
    return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng));
  };
  // ports[s]: what each port of switch s (1-based, in order) connects to.
  std::vector<std::vector<std::string>> ports(switches);
  std::set<std::pair<int, int>> joined;
  auto cable = [&](int a, int b) {
    joined.insert({std::min(a, b), std::max(a, b)});
    const int pa = static_cast<int>(ports[a].size()) + 1;
    const int pb = static_cast<int>(ports[b].size()) + 1;
    ports[a].push_back("\"sw" + std::to_string(b) + "\"[" + std::to_string(pb) +
                       "]");
    ports[b].push_back("\"sw" + std::to_string(a) + "\"[" + std::to_string(pa) +
                       "]");
  };
  for (int s = 1; s < switches; ++s) cable(s, pick(s));
  const int possible = switches * (switches - 1) / 2;
  for (int added = 0;
       added < extra_links && static_cast<int>(joined.size()) < possible;) {
    const int a = pick(switches), b = pick(switches);
    if (a == b || joined.count({std::min(a, b), std::max(a, b)})) continue;
    cable(a, b);
    ++added;
  }
  std::ostringstream out;
  for (int h = 0; h < hcas; ++h) {
    const int s = pick(switches);
    ports[s].push_back("\"hca" + std::to_string(h) + "\"[1]");
    out << "Hca\t1 \"hca" << h << "\"\n[1]\t\"sw" << s << "\"["
        << ports[s].size() << "]\n\n";
  }
  for (int s = 0; s < switches; ++s) {
    out << "Switch\t" << std::max<std::size_t>(ports[s].size(), 1) << " \"sw"
        << s << "\"\n";
    for (std::size_t p = 0; p < ports[s].size(); ++p) {
      out << "[" << p + 1 << "]\t" << ports[s][p] << "\n";
    }
    out << "\n";
  }
  return out.str();
}

std::vector<TracertHop> ParseIbtracert(const std::string& out) {
  static const std::regex from_re(R"re(^From .*"(.*)"$)re");
  static const std::regex hop_re(
      R"re(^\[(\d+)\] -> .*\}\[(\d+)\] .*"(.*)"$)re");
  std::vector<TracertHop> hops;
  std::istringstream in(out);
  std::string line, at;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, from_re)) {
      at = m[1];
    } else if (std::regex_match(line, m, hop_re)) {
      hops.push_back({at, std::stoi(m[1]), m[3], std::stoi(m[2])});
      at = m[3];
    }
  }
  return hops;
}

std::string MissingIbTools() {
  std::string missing;
  for (const char* tool : {"ibsim", "opensm", "sminfo", "perfquery",
                           "ibnetdiscover", "ibswitches", "ibqueryerrors"}) {
    if (!OnPath(tool))
      missing += std::string(missing.empty() ? "" : " ") + tool;
  }
  if (::access(kUmad2Sim, R_OK) != 0) {
    missing += std::string(missing.empty() ? "" : " ") + kUmad2Sim;
  }
  return missing;
}

IbsimFabric::IbsimFabric(std::string netfile) : netfile_(std::move(netfile)) {
  static std::atomic<int> counter{0};
  sockname_ = "fm" + std::to_string(::getpid()) + "_" +
              std::to_string(counter.fetch_add(1));
}

IbsimFabric::~IbsimFabric() {
  for (pid_t pid : clients_) StopClient(pid);
  for (pid_t pid : opensms_) KillAndReap(pid);
  if (ibsim_ > 0) {
    if (console_in_ >= 0) {
      const char quit[] = "Quit\n";
      (void)!::write(console_in_, quit, sizeof(quit) - 1);
    }
    KillAndReap(ibsim_);
  }
  if (console_in_ >= 0) ::close(console_in_);
  if (console_out_ >= 0) ::close(console_out_);
}

bool IbsimFabric::Start(std::string* error) {
  if (dir_.empty()) {
    *error = "cannot create a temp dir";
    return false;
  }
  const std::string net = dir_ + "/net";
  std::ofstream(net) << netfile_;
  // Limits sized to the fabric (ibsim's defaults stop at 256 switches).
  int nodes = 0, ports = 0;
  std::istringstream lines(netfile_);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("Switch", 0) == 0 || line.rfind("Hca", 0) == 0) {
      ++nodes;
      std::istringstream f(line.substr(line.find_first_of(" \t")));
      int n = 0;
      f >> n;
      ports += n + 1;
    }
  }
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
    *error = "pipe failed";
    return false;
  }
  const int err = ::open((dir_ + "/ibsim.err").c_str(),
                         O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ibsim_ = Spawn(
      {"ibsim", "-s", "-N", std::to_string(nodes + 16), "-S",
       std::to_string(nodes + 16), "-P", std::to_string(ports + 64), net},
      MergedEnv({"IBSIM_SOCKNAME=" + sockname_}), in[0], out[1], err, dir_);
  ::close(in[0]);
  ::close(out[1]);
  if (err >= 0) ::close(err);
  console_in_ = in[1];
  console_out_ = out[0];
  if (ibsim_ <= 0) {
    *error = "cannot start ibsim";
    return false;
  }
  const std::string banner =
      ReadUntil(console_out_, "sim> ",
                std::chrono::steady_clock::now() + std::chrono::seconds(60));
  if (banner.find("sim> ") == std::string::npos) {
    *error = "ibsim did not come up: " + banner + ReadFile(dir_ + "/ibsim.err");
    return false;
  }
  return true;
}

std::string IbsimFabric::Console(const std::string& command) {
  // Drop anything ibsim printed on its own since the last prompt.
  for (pollfd p{console_out_, POLLIN, 0};
       console_out_ >= 0 && ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);) {
    char buf[4096];
    if (::read(console_out_, buf, sizeof(buf)) <= 0) break;
  }
  const std::string line = command + "\n";
  if (console_in_ < 0 || ::write(console_in_, line.data(), line.size()) !=
                             static_cast<ssize_t>(line.size())) {
    return "";
  }
  return ReadUntil(console_out_, "sim> ",
                   std::chrono::steady_clock::now() + std::chrono::seconds(30));
}

int IbsimFabric::StartOpenSm(const OpenSmOptions& options) {
  const int index = static_cast<int>(opensms_.size());
  const std::string d = dir_ + "/opensm" + std::to_string(index);
  fs::create_directories(d);
  {
    std::ofstream conf(d + "/opensm.conf");
    conf << "sm_priority " << options.priority << "\n"
         << "sweep_interval " << options.sweep_interval << "\n"
         << "sminfo_polling_timeout 1000\n"
         << "polling_retry_number 2\n"
         << "log_file " << d << "/opensm.log\n"
         << "dump_files_dir " << d << "/\n"
         << "partition_config_file " << d << "/partitions.conf\n"
         << "daemon FALSE\nconsole off\n";
    for (const auto& line : options.config_lines) conf << line << "\n";
  }
  const int out =
      ::open((d + "/stdout").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  auto env = ClientEnv(options.sim_host);
  env.push_back("OSM_CACHE_DIR=" + d);
  env.push_back("OSM_TMP_DIR=" + d);
  env.insert(env.end(), options.env.begin(), options.env.end());
  const pid_t pid = Spawn({"opensm", "-F", d + "/opensm.conf"}, MergedEnv(env),
                          -1, out, out, d);
  if (out >= 0) ::close(out);
  opensms_.push_back(pid);
  return index;
}

void IbsimFabric::KillOpenSm(int index) {
  if (index < 0 || index >= static_cast<int>(opensms_.size())) return;
  KillAndReap(opensms_[index]);
  opensms_[index] = -1;
}

bool IbsimFabric::WaitForMaster(std::chrono::seconds timeout,
                                const std::string& sim_host,
                                std::uint64_t master_guid) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char want[32];
  std::snprintf(want, sizeof(want), "sm guid 0x%llx",
                static_cast<unsigned long long>(master_guid));
  while (std::chrono::steady_clock::now() < deadline) {
    const ToolOutput r = Run({"sminfo"}, sim_host);
    if (r.exit_code == 0 && r.out.find("SMINFO_MASTER") != std::string::npos &&
        (master_guid == 0 || r.out.find(want) != std::string::npos)) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return false;
}

pid_t IbsimFabric::StartClient(const std::vector<std::string>& argv,
                               const std::string& sim_host,
                               const std::string& log) {
  const int out =
      ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid =
      Spawn(argv, MergedEnv(ClientEnv(sim_host)), -1, out, out, dir_);
  if (out >= 0) ::close(out);
  if (pid > 0) clients_.push_back(pid);
  return pid;
}

pid_t IbsimFabric::StartProcess(const std::vector<std::string>& argv,
                                const std::string& log) {
  std::vector<std::string> env;
  for (const std::string& e : MergedEnv({})) {
    if (e.rfind("LD_PRELOAD=", 0) != 0) env.push_back(e);
  }
  const int out =
      ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = Spawn(argv, env, -1, out, out, dir_);
  if (out >= 0) ::close(out);
  if (pid > 0) clients_.push_back(pid);
  return pid;
}

void IbsimFabric::StopClient(pid_t pid) {
  if (pid <= 0) return;
  auto it = std::find(clients_.begin(), clients_.end(), pid);
  if (it == clients_.end()) return;
  clients_.erase(it);
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  KillAndReap(pid);
}

std::vector<std::string> IbsimFabric::ClientEnv(
    const std::string& sim_host) const {
  std::vector<std::string> env = {std::string("LD_PRELOAD=") + kUmad2Sim,
                                  "IBSIM_SOCKNAME=" + sockname_};
  if (!sim_host.empty()) env.push_back("SIM_HOST=" + sim_host);
  return env;
}

std::string IbsimFabric::ShellPrefix(const std::string& sim_host) const {
  std::string prefix = "env";
  for (const auto& e : ClientEnv(sim_host)) prefix += " '" + e + "'";
  return prefix + " ";
}

ToolOutput IbsimFabric::Run(const std::vector<std::string>& argv,
                            const std::string& sim_host) const {
  ToolOutput result;
  static std::atomic<int> counter{0};
  const std::string base =
      dir_ + "/tool" + std::to_string(counter.fetch_add(1));
  const int out =
      ::open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  const int err =
      ::open((base + ".err").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  std::vector<std::string> args = {"timeout", "-s", "KILL", "120"};
  args.insert(args.end(), argv.begin(), argv.end());
  const pid_t pid =
      Spawn(args, MergedEnv(ClientEnv(sim_host)), -1, out, err, dir_);
  if (out >= 0) ::close(out);
  if (err >= 0) ::close(err);
  if (pid > 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  result.out = ReadFile(base + ".out");
  result.err = ReadFile(base + ".err");
  std::error_code ec;
  fs::remove(base + ".out", ec);
  fs::remove(base + ".err", ec);
  return result;
}

}  // namespace fabric::testing

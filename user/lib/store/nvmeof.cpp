// SPDX-License-Identifier: BSD-2-Clause
// NVMe-oF namespaces for the store: find or make the nvme-rdma controller
// of a subsystem, then O_DIRECT I/O on its namespace's block device.
#include "nvmeof.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace dsmem::store {

namespace {

constexpr const char *kNvmeClass = "/sys/class/nvme";
constexpr uint64_t kBounceMax = 1 << 20;	// bytes per O_DIRECT call
// A lost link fails I/O within seconds instead of the kernel's default
// ten minutes of reconnecting (nvme-cli 2.3 has no --fast_io_fail_tmo:
// ctrl-loss-tmo bounds how long I/O waits for a reconnect).
constexpr const char *kReconnectDelay = "1";	// seconds between tries
constexpr const char *kCtrlLossTmo = "5";	// then the controller is gone
constexpr const char *kKeepAliveTmo = "5";	// a silent target is noticed

std::string read_attr(const std::string &path)
{
	std::ifstream f(path);
	std::string s;
	std::getline(f, s);
	while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0'))
		s.pop_back();
	return s;
}

std::vector<std::string> list_dir(const std::string &path)
{
	std::vector<std::string> out;
	DIR *d = opendir(path.c_str());
	if (!d)
		return out;
	while (struct dirent *e = readdir(d))
		if (e->d_name[0] != '.')
			out.emplace_back(e->d_name);
	closedir(d);
	std::sort(out.begin(), out.end());
	return out;
}

// "traddr=10.0.0.1,trsvcid=4420[,src_addr=...]": does it name this target?
bool address_matches(const std::string &address, const std::string &traddr, uint32_t trsvcid)
{
	std::string want_addr = "traddr=" + traddr, want_port = "trsvcid=" + std::to_string(trsvcid);
	bool addr_ok = false, port_ok = false;
	size_t pos = 0;
	while (pos <= address.size()) {
		size_t comma = address.find(',', pos);
		std::string field = address.substr(pos, comma == std::string::npos ? std::string::npos
										      : comma - pos);
		addr_ok |= field == want_addr;
		port_ok |= field == want_port;
		if (comma == std::string::npos)
			break;
		pos = comma + 1;
	}
	return addr_ok && port_ok;
}

// The controller (nvmeN) of a live rdma connection to the subsystem.
std::string find_controller(const std::string &traddr, uint32_t trsvcid, const std::string &subnqn)
{
	for (const std::string &c : list_dir(kNvmeClass)) {
		std::string dir = std::string(kNvmeClass) + "/" + c;
		if (read_attr(dir + "/subsysnqn") != subnqn || read_attr(dir + "/transport") != "rdma")
			continue;
		if (!address_matches(read_attr(dir + "/address"), traddr, trsvcid))
			continue;
		std::string state = read_attr(dir + "/state");
		if (!state.empty() && state != "live" && state != "connecting" && state != "resetting")
			continue;
		return c;
	}
	return {};
}

// The block device of the controller's first namespace: nvmeXnY, or with
// native multipath the head nvmeSnY of a hidden nvmeScXnY.
std::string find_namespace(const std::string &ctrl)
{
	static const std::regex plain("^nvme[0-9]+n[0-9]+$");
	static const std::regex hidden("^nvme([0-9]+)c[0-9]+n([0-9]+)$");
	std::string dir = std::string(kNvmeClass) + "/" + ctrl;
	for (const std::string &e : list_dir(dir)) {
		std::smatch m;
		if (std::regex_match(e, plain))
			return "/dev/" + e;
		if (std::regex_match(e, m, hidden))
			return "/dev/nvme" + m[1].str() + "n" + m[2].str();
	}
	return {};
}

int run_nvme_connect(const std::string &traddr, uint32_t trsvcid, const std::string &subnqn,
		     std::string *err)
{
	std::string port = std::to_string(trsvcid);
	std::string reconnect = std::string("--reconnect-delay=") + kReconnectDelay;
	std::string loss = std::string("--ctrl-loss-tmo=") + kCtrlLossTmo;
	std::string keepalive = std::string("--keep-alive-tmo=") + kKeepAliveTmo;
	const char *argv[] = {"nvme", "connect", "-t", "rdma", "-a", traddr.c_str(),
			      "-s", port.c_str(), "-n", subnqn.c_str(), reconnect.c_str(),
			      loss.c_str(), keepalive.c_str(), nullptr};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	// its chatter is not ours to print
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int ret = posix_spawnp(&pid, "nvme", &fa, nullptr, const_cast<char **>(argv), environ);
	posix_spawn_file_actions_destroy(&fa);
	if (ret) {
		*err = std::string("nvme connect: ") + strerror(ret) + " (is nvme-cli installed?)";
		return -ret;
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		// another process may have connected it meanwhile
		if (find_controller(traddr, trsvcid, subnqn).empty()) {
			*err = "nvme connect -t rdma -a " + traddr + " -s " + port + " -n " + subnqn +
			       " " + reconnect + " " + loss + " " + keepalive + " failed";
			return -EIO;
		}
	}
	return 0;
}

}  // namespace

NvmeofTarget::~NvmeofTarget()
{
	if (fd_ >= 0)
		::close(fd_);
}

int NvmeofTarget::attach(const std::string &traddr, uint32_t trsvcid, const std::string &subnqn,
			 std::unique_ptr<NvmeofTarget> *out, std::string *err)
{
	std::string ctrl = find_controller(traddr, trsvcid, subnqn);
	if (ctrl.empty()) {
		if (int ret = run_nvme_connect(traddr, trsvcid, subnqn, err))
			return ret;
	}
	// the controller and its namespace appear asynchronously
	std::string dev;
	auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	for (;;) {
		if (ctrl.empty())
			ctrl = find_controller(traddr, trsvcid, subnqn);
		if (!ctrl.empty())
			dev = find_namespace(ctrl);
		struct stat sb;
		if (!dev.empty() && stat(dev.c_str(), &sb) == 0 && S_ISBLK(sb.st_mode))
			break;
		if (std::chrono::steady_clock::now() > until) {
			*err = "no namespace of " + subnqn + " at " + traddr + ":" +
			       std::to_string(trsvcid) + (ctrl.empty() ? " (no controller)" : "");
			return -ENODEV;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}

	std::unique_ptr<NvmeofTarget> t(new NvmeofTarget());
	t->fd_ = ::open(dev.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
	if (t->fd_ < 0) {
		int e = errno;
		*err = dev + ": " + strerror(e);
		return -e;
	}
	t->device_ = dev;
	if (ioctl(t->fd_, BLKGETSIZE64, &t->capacity_) < 0) {
		int e = errno;
		*err = dev + ": BLKGETSIZE64: " + strerror(e);
		return -e;
	}
	int lbs = 0;
	if (ioctl(t->fd_, BLKSSZGET, &lbs) == 0 && lbs > 4096)
		t->block_ = static_cast<uint64_t>(lbs);
	*out = std::move(t);
	return 0;
}

namespace {

struct Bounce {
	void *p = nullptr;
	explicit Bounce(uint64_t len, uint64_t align)
	{
		if (posix_memalign(&p, align, len))
			p = nullptr;
	}
	~Bounce() { free(p); }
	char *data() { return static_cast<char *>(p); }
};

int full_io(bool write, int fd, char *buf, uint64_t len, uint64_t off)
{
	while (len) {
		ssize_t n = write ? ::pwrite(fd, buf, len, static_cast<off_t>(off))
				  : ::pread(fd, buf, len, static_cast<off_t>(off));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	// past the end
		buf += n;
		off += static_cast<uint64_t>(n);
		len -= static_cast<uint64_t>(n);
	}
	return 0;
}

}  // namespace

int NvmeofTarget::pwrite(const void *buf, uint64_t len, uint64_t off, std::string *err,
			 Deadline deadline)
{
	if (off > capacity_ || len > capacity_ - off) {
		*err = device_ + ": write past the end";
		return -ERANGE;
	}
	Bounce b(kBounceMax, block_);
	if (!b.p)
		return -ENOMEM;
	const char *src = static_cast<const char *>(buf);
	while (len) {
		if (std::chrono::steady_clock::now() >= deadline) {
			*err = device_ + ": out of time";
			return -ETIMEDOUT;
		}
		uint64_t start = off & ~(block_ - 1);
		uint64_t head = off - start;
		uint64_t n = std::min(len, kBounceMax - head);
		uint64_t span = (head + n + block_ - 1) & ~(block_ - 1);
		// partial first or last block: read it before changing part of it
		if (head) {
			if (int ret = full_io(false, fd_, b.data(), block_, start)) {
				*err = device_ + ": read: " + strerror(-ret);
				return ret;
			}
		}
		if ((head + n) % block_ && (span > block_ || !head)) {
			uint64_t last = span - block_;
			if (int ret = full_io(false, fd_, b.data() + last, block_, start + last)) {
				*err = device_ + ": read: " + strerror(-ret);
				return ret;
			}
		}
		memcpy(b.data() + head, src, n);
		if (int ret = full_io(true, fd_, b.data(), span, start)) {
			*err = device_ + ": write: " + strerror(-ret);
			return ret;
		}
		src += n;
		off += n;
		len -= n;
	}
	return 0;
}

int NvmeofTarget::pread(void *buf, uint64_t len, uint64_t off, std::string *err,
			Deadline deadline)
{
	if (off > capacity_ || len > capacity_ - off) {
		*err = device_ + ": read past the end";
		return -ERANGE;
	}
	Bounce b(kBounceMax, block_);
	if (!b.p)
		return -ENOMEM;
	char *dst = static_cast<char *>(buf);
	while (len) {
		if (std::chrono::steady_clock::now() >= deadline) {
			*err = device_ + ": out of time";
			return -ETIMEDOUT;
		}
		uint64_t start = off & ~(block_ - 1);
		uint64_t head = off - start;
		uint64_t n = std::min(len, kBounceMax - head);
		uint64_t span = (head + n + block_ - 1) & ~(block_ - 1);
		if (int ret = full_io(false, fd_, b.data(), span, start)) {
			*err = device_ + ": read: " + strerror(-ret);
			return ret;
		}
		memcpy(dst, b.data() + head, n);
		dst += n;
		off += n;
		len -= n;
	}
	return 0;
}

int NvmeofTarget::sync(std::string *err)
{
	int ret;
	while ((ret = ::fdatasync(fd_)) < 0 && errno == EINTR)
		;
	if (ret < 0) {
		int e = errno;
		*err = device_ + ": flush: " + strerror(e);
		return -e;
	}
	return 0;
}

}  // namespace dsmem::store

// SPDX-License-Identifier: BSD-2-Clause
// libdsuser -- header-only C++20 layer over the C ABI in ds.h.
// RAII handles and result types; nothing here throws, and no exception
// ever crosses the C ABI.
#pragma once

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <dsmem/ds.h>

namespace dsmem {

// A failure: a negative errno and the best text there is for it.
struct error {
	int code = 0;
	std::string message;

	std::string what() const
	{
		if (!message.empty())
			return message;
		return std::strerror(-code);
	}
};

template <typename T>
class result {
public:
	result(T value) : v_(std::move(value)) {}
	result(error e) : v_(std::move(e)) {}

	bool ok() const { return v_.index() == 0; }
	explicit operator bool() const { return ok(); }
	T &value() & { return std::get<0>(v_); }
	T &&value() && { return std::get<0>(std::move(v_)); }
	T &operator*() & { return value(); }
	T *operator->() { return &value(); }
	const error &err() const { return std::get<1>(v_); }

private:
	std::variant<T, error> v_;
};

template <>
class result<void> {
public:
	result() = default;
	result(error e) : e_(std::move(e)), ok_(false) {}

	bool ok() const { return ok_; }
	explicit operator bool() const { return ok_; }
	const error &err() const { return e_; }

private:
	error e_;
	bool ok_ = true;
};

class context {
public:
	static result<context> open()
	{
		ds_ctx *c = nullptr;
		int ret = ds_ctx_open(&c);
		if (ret == -ENOENT)
			return error{ret, "the dsmem module is not loaded"};
		if (ret)
			return error{ret, {}};
		return context(c);
	}

	ds_ctx *get() const { return ctx_.get(); }

	result<ds_version> version()
	{
		ds_version v{};
		if (int r = ds_version_get(get(), &v))
			return last_error(r);
		return v;
	}

	result<ds_version> chrdev_version()
	{
		ds_version v{};
		if (int r = ds_ctx_chrdev_version(get(), &v))
			return last_error(r);
		return v;
	}

	result<std::vector<ds_dev_info>> devices()
	{
		ds_dev_info *arr = nullptr;
		size_t n = 0;
		if (int r = ds_dev_list(get(), &arr, &n))
			return last_error(r);
		std::vector<ds_dev_info> out(arr, arr + n);
		ds_dev_list_free(arr);
		return out;
	}

	result<ds_dev_info> device(const std::string &name)
	{
		ds_dev_info d{};
		if (int r = ds_dev_get(get(), name.c_str(), &d))
			return last_error(r);
		return d;
	}

	result<ds_dev_info> device(uint32_t index)
	{
		ds_dev_info d{};
		if (int r = ds_dev_get_by_index(get(), index, &d))
			return last_error(r);
		return d;
	}

	result<std::vector<ds_stat>> stats()
	{
		ds_stat *arr = nullptr;
		size_t n = 0;
		if (int r = ds_stats_get(get(), &arr, &n))
			return last_error(r);
		std::vector<ds_stat> out(arr, arr + n);
		ds_stats_free(arr);
		return out;
	}

	result<void> reset_stats()
	{
		if (int r = ds_stats_reset(get()))
			return last_error(r);
		return {};
	}

private:
	struct closer {
		void operator()(ds_ctx *c) const { ds_ctx_close(c); }
	};

	explicit context(ds_ctx *c) : ctx_(c) {}
	error last_error(int code) const { return error{code, ds_ctx_errmsg(get())}; }

	std::unique_ptr<ds_ctx, closer> ctx_;
};

class monitor {
public:
	static result<monitor> open()
	{
		ds_monitor *m = nullptr;
		if (int r = ds_monitor_open(&m))
			return error{r, {}};
		return monitor(m);
	}

	int fd() const { return ds_monitor_fd(mon_.get()); }

	// -EAGAIN in the error when the timeout passed first.
	result<ds_event> next(int timeout_ms = -1)
	{
		ds_event ev{};
		if (int r = ds_monitor_next(mon_.get(), &ev, timeout_ms))
			return error{r, {}};
		return ev;
	}

private:
	struct closer {
		void operator()(ds_monitor *m) const { ds_monitor_close(m); }
	};

	explicit monitor(ds_monitor *m) : mon_(m) {}

	std::unique_ptr<ds_monitor, closer> mon_;
};

}  // namespace dsmem

// SPDX-License-Identifier: BSD-2-Clause
// dsmaster's life: the gRPC server, and who leads.
//
// Without --etcd there is one master: it leads at once, with its metadata
// in --data-dir.  With --etcd, masters campaign on PREFIX/leader (a
// lease-backed key): the winner opens the etcd log fenced by that key's
// create_revision (a deposed leader's writes fail), replays snapshot and
// log, and serves; the others answer "not the leader; leader is ADDR".
// Every master also keeps PREFIX/masters/ADDR alive, the standby list.
#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "etcd.hpp"
#include "persist.hpp"
#include "service.hpp"

namespace dsmem::store {

namespace {

struct Stopper {
	std::mutex m;
	std::condition_variable cv;
	bool stop = false;
	std::string lost;	// the leader's log failed: why

	// false once asked to stop (or leadership lost, with lost set)
	bool wait(std::chrono::milliseconds d)
	{
		std::unique_lock<std::mutex> l(m);
		cv.wait_for(l, d, [&] { return stop || !lost.empty(); });
		return !stop && lost.empty();
	}
	void set_lost(const std::string &why)
	{
		std::lock_guard<std::mutex> g(m);
		if (lost.empty())
			lost = why;
		cv.notify_all();
	}
	std::string take_lost()
	{
		std::lock_guard<std::mutex> g(m);
		std::string s;
		s.swap(lost);
		return s;
	}
	bool stopping()
	{
		std::lock_guard<std::mutex> g(m);
		return stop;
	}
};

void signal_thread(Stopper *s, sigset_t set)
{
	int sig = 0;
	sigwait(&set, &sig);
	log_line("%s: shutting down", strsignal(sig));
	std::lock_guard<std::mutex> g(s->m);
	s->stop = true;
	s->cv.notify_all();
}

// Serves with the file log until stopped; the exit status.
int run_single(const Options &opts, MasterService &svc, SlowTier *slow, Mover *mover, Stopper &stopper)
{
	std::string err;
	std::unique_ptr<MetaLog> log = open_file_log(opts.data_dir, &err);
	if (!log) {
		log_line("metadata in %s: %s", opts.data_dir.c_str(), err.c_str());
		return 1;
	}
	auto leader = std::make_shared<Leader>(opts, slow, mover);
	leader->set_metrics(svc.metrics());
	// the file log is locked: whoever led an earlier term is gone, and
	// its copies with it
	leader->set_quiesced([](uint64_t) { return true; });
	if (int ret = leader->start(std::move(log), [&](const std::string &why) { stopper.set_lost(why); },
				    &err)) {
		log_line("cannot load the metadata (%s): %s", strerror(-ret), err.c_str());
		return 1;
	}
	svc.set_leader_addr(opts.advertise);
	svc.set_leader(leader);
	while (stopper.wait(std::chrono::milliseconds(1000)))
		;
	std::string lost = stopper.take_lost();
	svc.shutting_down();
	svc.set_leader(nullptr);
	leader->stop();
	if (!lost.empty()) {
		log_line("stopped serving: %s", lost.c_str());
		return 1;
	}
	return 0;
}

// PREFIX/quiesced/TERM: the leader of term has stopped, after the last
// byte of its copies (Leader::stop waits for them), so a later leader may
// give the space that term reserved to others.  Not fenced: a deposed
// leader writes it.
std::string quiesced_key(const Options &opts, uint64_t term)
{
	char t[24];
	snprintf(t, sizeof(t), "%020llu", static_cast<unsigned long long>(term));
	return opts.etcd_prefix + "/quiesced/" + t;
}

// The standby registry entry, on its own lease.
struct Registry {
	std::shared_ptr<EtcdClient> etcd;
	std::string key, value;
	int64_t ttl = 2, lease = 0;

	void beat()
	{
		std::string err;
		int64_t left = 0;
		if (lease && !etcd->lease_keepalive(lease, &left, &err) && left > 0)
			return;
		lease = 0;
		if (etcd->lease_grant(ttl, &lease, &err) || etcd->put(key, value, lease, &err))
			lease = 0;
	}
	void leave()
	{
		std::string err;
		if (lease)
			etcd->lease_revoke(lease, &err);
	}
};

int run_ha(const Options &opts, MasterService &svc, SlowTier *slow, Mover *mover, Stopper &stopper)
{
	auto etcd = std::make_shared<EtcdClient>(opts.etcd, opts.etcd_tls);
	const std::string leader_key = opts.etcd_prefix + "/leader";
	Election election(etcd, leader_key, opts.advertise, opts.etcd_ttl_s);
	Registry reg{ etcd, opts.etcd_prefix + "/masters/" + opts.advertise, opts.advertise,
		      opts.etcd_ttl_s, 0 };
	auto period = std::chrono::milliseconds(std::max<int64_t>(100, opts.etcd_ttl_s * 1000 / 3));
	// after a renewal that failed while the lease holds (step())
	constexpr std::chrono::milliseconds kRenewRetry{ 300 };
	bool retry_soon = false;
	std::shared_ptr<Leader> leader;
	std::string last_holder, last_err;
	std::vector<uint64_t> unsaid;	// terms led and stopped, not yet in etcd
	// every master of the group reaches the same slow tier (or has none)
	bool claimed = !slow, refused = false;
	auto say_stopped = [&] {
		std::string err;
		std::erase_if(unsaid, [&](uint64_t t) {
			return !etcd->put(quiesced_key(opts, t), opts.advertise, 0, &err);
		});
	};

	log_line("campaigning on %s at %s (ttl %llds)", leader_key.c_str(), opts.etcd.c_str(),
		 static_cast<long long>(opts.etcd_ttl_s));
	auto step = [&] {
		std::string err;
		if (!claimed) {
			int ret = claim_slow_tier(*etcd, opts.etcd_prefix + "/slow-tier", *slow, &err);
			if (ret == -EXDEV) {
				log_line("refusing to serve: %s", err.c_str());
				refused = true;
				return;
			}
			if (ret) {
				if (err != last_err)
					log_line("etcd: %s", err.c_str());
				last_err = err;
				return;
			}
			claimed = true;
			log_line("slow tier %s (id %s): the group's", slow->describe().c_str(),
				 slow->id().c_str());
		}
		reg.beat();
		say_stopped();
		if (!leader) {
			stopper.take_lost();	// a late word from a term already over
			bool won = false;
			int ret = election.campaign(&won, &err);
			if (ret) {
				if (err != last_err)
					log_line("etcd: %s", err.c_str());
				last_err = err;
				return;
			}
			last_err.clear();
			if (!won) {
				std::string holder;
				if (election.leader(&holder, &err))
					holder.clear();
				if (holder != last_holder)
					log_line("standby; leader is %s", holder.empty() ? "(none)" : holder.c_str());
				last_holder = holder;
				svc.set_leader_addr(holder);
				return;
			}
			log_line("elected (fence revision %lld)", static_cast<long long>(election.revision()));
			std::shared_ptr<Leader> l;
			{
				// the lease lives on through the takeover, however
				// long the log takes to read and replay
				LeaseRenewer renewing(election, period);
				std::unique_ptr<MetaLog> log = open_etcd_log(etcd, opts.etcd_prefix + "/meta",
									     leader_key, election.revision(),
									     &err);
				if (log) {
					l = std::make_shared<Leader>(opts, slow, mover);
					l->set_metrics(svc.metrics());
					l->extend_lease(election.held_until_ns());
					l->set_quiesced([etcd, &opts](uint64_t t) {
						EtcdKV kv;
						std::string e;
						return etcd->get(quiesced_key(opts, t), &kv, &e) == 0;
					});
					ret = l->start(std::move(log),
						       [&](const std::string &why) { stopper.set_lost(why); },
						       &err);
				}
			}
			if (l && !ret)
				l->extend_lease(election.held_until_ns());
			if (!l || ret) {
				log_line("cannot take over: %s", err.c_str());
				if (l)
					l->stop();
				election.resign();
				return;
			}
			leader = l;
			last_holder = opts.advertise;
			svc.set_leader_addr(opts.advertise);
			svc.set_leader(leader);
		}
		std::string lost = stopper.take_lost();
		int ret = election.keepalive(&err);
		// A renewal that failed without an answer (its deadline passed:
		// etcd slow under load, or this process was frozen) is tried
		// again while the lease still holds: nobody else can lead until
		// it runs out, reads stop at its end, and writes are fenced.
		// Stepping down at once made a needless failover of a slow call.
		if (ret && ret != -ESTALE && lost.empty() &&
		    Election::clock_ns() + kRenewRetry.count() * 1000000LL < election.held_until_ns()) {
			log_line("etcd lease renewal failed (%s); the lease holds %lld ms more, "
				 "trying again",
				 err.c_str(),
				 static_cast<long long>((election.held_until_ns() - Election::clock_ns()) /
							1000000));
			retry_soon = true;
			return;
		}
		if (ret || !lost.empty()) {
			log_line("leadership lost: %s", lost.empty() ? err.c_str() : lost.c_str());
			svc.set_leader(nullptr);
			svc.set_leader_addr("");
			uint64_t term = leader->term();
			leader->stop();
			unsaid.push_back(term);
			say_stopped();
			leader.reset();
			election.resign();
			last_holder.clear();
			return;
		}
		leader->extend_lease(election.held_until_ns());
		std::vector<EtcdKV> masters;
		if (!etcd->range(opts.etcd_prefix + "/masters/", &masters, &err)) {
			std::vector<std::string> standbys;
			for (const auto &kv : masters)
				if (kv.value != opts.advertise)
					standbys.push_back(kv.value);
			leader->set_standbys(std::move(standbys));
		}
	};
	while (!stopper.stopping() && !refused) {
		retry_soon = false;
		step();
		if (!refused)
			stopper.wait(retry_soon ? kRenewRetry : period);
	}

	svc.shutting_down();
	svc.set_leader(nullptr);
	if (leader) {
		uint64_t term = leader->term();
		leader->stop();
		unsaid.push_back(term);
		election.resign();
		log_line("resigned");
	}
	say_stopped();
	reg.leave();
	return refused ? 1 : 0;
}

}  // namespace

int run_master(const Options &opts)
{
	// signals go to one thread, which asks the rest to stop
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, nullptr);
	signal(SIGPIPE, SIG_IGN);
	Stopper stopper;
	std::thread sig(signal_thread, &stopper, set);
	sig.detach();

	std::unique_ptr<SlowTier> slow;
	if (opts.slow_tier != "none") {
		std::string err;
		slow = open_slow_tier(opts.slow_tier, &err);
		if (!slow) {
			log_line("slow tier %s: %s", opts.slow_tier.c_str(), err.c_str());
			return 1;
		}
	}
	Mover mover(opts.node);
	std::shared_ptr<grpc::ServerCredentials> creds;
	std::string cerr;
	if (server_credentials(opts.tls, &creds, &cerr)) {
		log_line("TLS: %s", cerr.c_str());
		return 1;
	}
	if (opts.tls.insecure)
		log_line("INSECURE: --insecure given: no TLS, every caller on loopback is trusted as an admin");
	MasterService svc(opts);
	// every master serves its metrics, a standby what it knows
	MetricsServer metrics;
	if (opts.metrics_listen != "none") {
		std::string merr;
		if (metrics.start(opts.metrics_listen, [&svc, &opts] { return scrape(svc, opts); }, &merr)) {
			log_line("--metrics-listen %s: %s", opts.metrics_listen.c_str(), merr.c_str());
			return 1;
		}
		log_line("metrics: GET /metrics on %s (port %d)", opts.metrics_listen.c_str(), metrics.port());
		if (!loopback_only(opts.metrics_listen))
			log_line("UNAUTHENTICATED: metrics on http://%s/metrics are plaintext, for anyone "
				 "who reaches that address (they hold no secrets; --metrics-listen "
				 "127.0.0.1:PORT keeps them on this host)", opts.metrics_listen.c_str());
	}
	grpc::ServerBuilder b;
	int port = 0;
	b.AddListeningPort(opts.listen, creds, &port);
	b.RegisterService(&svc);
	b.SetMaxReceiveMessageSize(64 << 20);
	b.SetMaxSendMessageSize(64 << 20);
	// gRPC sets SO_REUSEPORT by default: a second master on the same
	// port would silently get half of the clients' calls
	b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
	std::unique_ptr<grpc::Server> server = b.BuildAndStart();
	if (!server || !port) {
		log_line("cannot listen on %s (in use?)", opts.listen.c_str());
		return 1;
	}
	log_line("listening on %s (advertised as %s), node %u at %s port %u, slow tier %s",
		 opts.listen.c_str(), opts.advertise.c_str(), opts.node, opts.addr.c_str(), opts.port,
		 slow ? slow->describe().c_str() : "none");

	int status = opts.etcd.empty() ? run_single(opts, svc, slow.get(), &mover, stopper)
				       : run_ha(opts, svc, slow.get(), &mover, stopper);
	metrics.stop();
	server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
	server->Wait();
	log_line("exit");
	return status;
}

}  // namespace dsmem::store

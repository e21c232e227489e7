// SPDX-License-Identifier: BSD-2-Clause
// libdsuser's data path without a module: how a ds_transfer_request
// becomes the struct dsmem_xfer_req of a batch, and the requests refused
// before any ioctl.
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstring>

#include <linux/dsmem.h>

#include "ds_internal.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

using namespace dsmem::detail;

namespace {

ds_transfer_request req(uint32_t op, uint64_t target_id, uint64_t target_offset)
{
	ds_transfer_request r{};
	r.source_offset = 0x1000;
	r.target_id = target_id;
	r.target_offset = target_offset;
	r.length = 64;
	r.opcode = op;
	r.mr = 7;
	r.compare_add = 11;
	r.swap = 12;
	return r;
}

void test_convert_fields(void **)
{
	struct dsmem_xfer_req k;
	memset(&k, 0xff, sizeof(k));	// every byte must be written
	ds_transfer_request r = req(DS_OP_CAS, DSMEM_GADDR(4, 2, 0), 4096);
	assert_int_equal(to_xfer_req(r, &k), 0);
	assert_int_equal(k.opcode, DSMEM_XFER_CAS);
	assert_int_equal(k.flags, 0);
	assert_int_equal(k.__pad, 0);
	assert_int_equal(k.mr, 7);
	assert_int_equal(k.local, 0x1000);
	assert_true(k.remote == DSMEM_GADDR(4, 2, 4096));
	assert_int_equal(k.len, 64);
	assert_int_equal(k.compare_add, 11);
	assert_int_equal(k.swap, 12);
}

void test_convert_opcodes(void **)
{
	struct dsmem_xfer_req k;
	const uint32_t ops[] = { DS_OP_READ, DS_OP_WRITE, DS_OP_CAS, DS_OP_FAA };
	const uint8_t kops[] = { DSMEM_XFER_READ, DSMEM_XFER_WRITE, DSMEM_XFER_CAS,
				 DSMEM_XFER_FAA };
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(to_xfer_req(req(ops[i], DSMEM_GADDR(1, 1, 0), 0), &k), 0);
		assert_int_equal(k.opcode, kops[i]);
	}
	// unknown opcodes are refused, not truncated to a u8 (256 is not READ)
	assert_int_equal(to_xfer_req(req(DSMEM_XFER_OP_MAX + 1, DSMEM_GADDR(1, 1, 0), 0), &k),
			 -EINVAL);
	assert_int_equal(to_xfer_req(req(256, DSMEM_GADDR(1, 1, 0), 0), &k), -EINVAL);
}

void test_convert_offset_overflow(void **)
{
	struct dsmem_xfer_req k;

	// the sum wraps around 2^64
	assert_int_equal(to_xfer_req(req(DS_OP_READ, UINT64_MAX - 3, 8), &k), -EINVAL);
	assert_int_equal(to_xfer_req(req(DS_OP_READ, DSMEM_GADDR(1, 1, 0), UINT64_MAX), &k),
			 -EINVAL);
	// the sum leaves the segment: it would name the next one
	assert_int_equal(to_xfer_req(req(DS_OP_READ, DSMEM_GADDR(1, 1, 0),
					 DSMEM_SEG_SIZE_MAX), &k), -EINVAL);
	assert_int_equal(to_xfer_req(req(DS_OP_READ, DSMEM_GADDR(1, 1, 16),
					 DSMEM_GADDR_OFF_MASK), &k), -EINVAL);
	assert_int_equal(to_xfer_req(req(DS_OP_READ, DSMEM_GADDR(DSMEM_NODE_ID_MAX,
							 DSMEM_SEG_ID_MAX, 1),
					 DSMEM_GADDR_OFF_MASK), &k), -EINVAL);
	// the segment's last byte is still in it
	assert_int_equal(to_xfer_req(req(DS_OP_READ, DSMEM_GADDR(1, 1, 0),
					 DSMEM_GADDR_OFF_MASK), &k), 0);
	assert_true(k.remote == DSMEM_GADDR(1, 1, DSMEM_GADDR_OFF_MASK));
	assert_int_equal(to_xfer_req(req(DS_OP_READ, DSMEM_GADDR(DSMEM_NODE_ID_MAX,
							 DSMEM_SEG_ID_MAX, 0),
					 DSMEM_GADDR_OFF_MASK), &k), 0);
	assert_true(k.remote == UINT64_MAX);
	// a target_id inside the segment, as an offset itself
	assert_int_equal(to_xfer_req(req(DS_OP_READ, DSMEM_GADDR(2, 3, 100), 28), &k), 0);
	assert_true(k.remote == DSMEM_GADDR(2, 3, 128));
}

void test_status_layout(void **)
{
	// ds_task_query hands the caller's array to the module as it is
	assert_int_equal(sizeof(ds_transfer_status), sizeof(struct dsmem_xfer_status));
	assert_int_equal(offsetof(ds_transfer_status, bytes),
			 offsetof(struct dsmem_xfer_status, bytes));
	assert_int_equal(sizeof(struct dsmem_xfer_req), 48);
}

void test_batch_bounds(void **)
{
	// refused before the handle is touched
	ds_transfer_request r = req(DS_OP_READ, DSMEM_GADDR(1, 1, 0), 0);
	uint64_t task = 0;
	assert_int_equal(ds_batch_submit(nullptr, &r, 0, &task), -EINVAL);
	assert_int_equal(ds_batch_submit(nullptr, &r, DSMEM_SUBMIT_REQS_MAX + 1, &task),
			 -EINVAL);
	assert_int_equal(ds_batch_submit(nullptr, nullptr, 1, &task), -EINVAL);
	// one bad request refuses the batch
	ds_transfer_request two[2] = { r, req(DS_OP_READ, UINT64_MAX, 1) };
	assert_int_equal(ds_batch_submit(nullptr, two, 2, &task), -EINVAL);
}

}  // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_convert_fields),
		cmocka_unit_test(test_convert_opcodes),
		cmocka_unit_test(test_convert_offset_overflow),
		cmocka_unit_test(test_status_layout),
		cmocka_unit_test(test_batch_bounds),
	};
	return cmocka_run_group_tests_name("dsuser_xfer", tests, nullptr, nullptr);
}

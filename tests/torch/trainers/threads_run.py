"""Two XLA:CPU devices in one process, one thread each, as torch_xla runs a TPU v2/v3 chip (``_run_thread_per_device``,
the function its spawn calls there), each thread reading its batches in a loader thread of its own as MpDeviceLoader
does. Prints one JSON line per thread: its ordinal in its own thread and in the loader thread, notebook 07's refusal,
and notebook 05's share (Accelerate's BatchSamplerShard over notebook 05's sampler, the ordinal read in the thread).

    CPU_NUM_DEVICES=2 PJRT_DEVICE=CPU PJRT_LOCAL_PROCESS_RANK=0 python threads_run.py
"""
from __future__ import annotations

import json
import threading


def main() -> None:
    import torch_xla.runtime as xr
    from accelerate.data_loader import BatchSamplerShard
    from torch_xla._internal import pjrt

    from tpu_helpers.banking77.lesson_cells import BucketBatchSampler
    from tpu_helpers.trainers.lesson_cells import check_one_device_per_process

    def in_loader_thread(fn):
        out = []
        worker = threading.Thread(target=lambda: out.append(fn()))
        worker.start()
        worker.join()
        return out[0]

    def replica():
        ordinal = xr.global_ordinal()  # in the replica's thread: its device
        try:
            check_one_device_per_process()
            refusal = ""
        except RuntimeError as e:
            refusal = str(e)
        sampler = BucketBatchSampler(list(range(4, 36)) * 4, 4, (16, 32, 40), num_replicas=2, shuffle=True, seed=0)
        shard = BatchSamplerShard(sampler, num_processes=2, process_index=ordinal)  # what accelerate.prepare builds
        rows = in_loader_thread(lambda: [i for batch in shard for i, _ in batch])
        return {"ordinal": ordinal, "loader_thread_ordinal": in_loader_thread(xr.global_ordinal),
                "devices": xr.addressable_device_count(), "refusal": refusal, "rows_05": rows}

    results = pjrt._run_thread_per_device(0, 1, replica, initializer_fn=lambda rank, size: None)
    print(json.dumps([results[k] for k in sorted(results)]))


if __name__ == "__main__":
    main()

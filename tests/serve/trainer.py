"""A checkpointing 'training' job for the tidal tests: a step every 0.2 s, a
checkpoint every 5 steps and when tide warns (preemption's signal), then it
leaves; after a requeue it resumes from the newest checkpoint. Prints
'start STEP RESTART' when it starts and 'saved STEP' when warned."""

import sys
import time

import tide.job as tj

tj.install_signal_handler()
step = 0
last = tj.latest_checkpoint()
if last is not None:
    step = int(last[1].read_text()) + 1
print(f"start {step} {tj.restart_count()}", flush=True)
while True:
    time.sleep(0.2)
    warned = tj.should_checkpoint()
    if step % 5 == 4 or warned:
        tj.atomic_write(tj.checkpoint_path(step, "txt"), str(step).encode())
        tj.notify_checkpoint(step)
        if warned:
            print(f"saved {step}", flush=True)
            sys.exit(0)
    step += 1

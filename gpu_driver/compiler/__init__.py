"""The kernel compiler: lower a validated model to kernel instances, plan memory, generate one program."""

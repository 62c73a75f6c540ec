"""The I/O both processes share: settings from the environment, the Redis client, the enqueue, the
run log, and the `plangate gate` command. core/ stays data in, data out; this is where it meets the
machine."""

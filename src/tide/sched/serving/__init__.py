"""The pure rules of serving: the autoscaler (`hpa`), lending and reclaim
between pools (`lending`), and the two-pass pooled policy (`pools`) that
schedules service replicas with the same core as batch jobs. No clock, no
I/O: the live controller and the twin drive the same functions
(docs/services.md)."""

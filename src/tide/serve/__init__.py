"""Inference services, live: the spec at the edge (`spec`), the request
router (`router`), the replica controller and its probes. The rules they
apply (autoscaling, lending) are the pure ones of tide.sched.serving
(docs/services.md)."""

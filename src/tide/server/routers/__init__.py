"""HTTP routes, thin: parse, call a service, return JSON."""

"""tide's controller: store, scheduling loop, executor and REST API."""

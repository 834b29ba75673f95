"""The live web dashboard at /ui (docs/dashboard.md): cluster, queue, jobs,
accounts, services. Server-rendered HTML (Jinja2) with inline SVG charts; a
small vendored stylesheet and script; no CDN, nothing fetched at run time."""

"""Which OS user a tide user's jobs run as, and who may submit (docs/security.md).

Per-user mode (the controller runs as root): every job runs as its owner's OS
user, the tide user's own name unless the cluster file maps it (`user_map:`);
a tide user with no OS account here is refused at submit (400).

Single-user mode (the controller is not root, or `tide server --single-user`):
every job runs as the controller's own OS user, so only that user's jobs are
accepted (403 for anyone else) unless an admin opts in with `--any-user`,
which runs every tide user's jobs as the controller's user: one trust domain,
for a personal machine or tests, never for a shared cluster.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tide.exec import identity
from tide.server.errors import ApiError, bad_request, forbidden


@dataclass(slots=True, frozen=True)
class JobUsers:
    per_user: bool  # jobs run as their users (root controller)
    server_user: str  # the controller's OS user
    any_user: bool = False  # single-user mode: every tide user's jobs accepted
    user_map: dict[str, str] = field(default_factory=dict)
    # OS users found, and until when that answer is kept (a submit checks the
    # account; a burst of one user's submissions asks the password database once)
    _found: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def start(cls, single_user: bool, any_user: bool, user_map: dict[str, str]) -> JobUsers:
        return cls(
            per_user=identity.is_root() and not single_user,
            server_user=identity.current().name,
            any_user=any_user,
            user_map=dict(user_map),
        )

    @property
    def mode(self) -> str:
        if self.per_user:
            return "per-user"
        return "single-user (any tide user)" if self.any_user else "single-user"

    def os_user(self, user: str) -> str:
        """The OS account of tide user `user` (the same name unless mapped)."""
        return self.user_map.get(user, user)

    def launch_user(self, user: str) -> str:
        """LaunchSpec.os_user for a job of `user`: "" runs it as the executor is."""
        return self.os_user(user) if self.per_user else ""

    def check(self, user: str) -> None:
        """May jobs of tide user `user` be accepted? ApiError with the fix if not."""
        os_user = self.os_user(user)
        if self.per_user:
            if not self._exists(os_user):
                mapped = f" (mapped to OS user {os_user!r})" if os_user != user else ""
                raise bad_request(
                    f"user {user!r}{mapped} has no OS account on this cluster: jobs run as "
                    "their users, so this one cannot run",
                    "user",
                    f"ask an admin to create the account (useradd {os_user}) or to map the "
                    f"tide user to an existing one in the cluster file (user_map: {{{user}: "
                    "OSNAME}})",
                )
            return
        if os_user != self.server_user and not self.any_user:
            raise _single_user_refusal(user, self.server_user)

    def check_acting(self, role: str, submitter: str, user: str) -> None:
        """Submitting as another user runs code as that user's OS account in
        per-user mode: administrators only (they hold every user's tokens anyway),
        as only root and SlurmUser may use sbatch --uid; operators may not."""
        if self.per_user and user != submitter and role != "admin":
            raise forbidden(
                f"jobs run as their users here, so a job for {user!r} runs as OS user "
                f"{self.os_user(user)!r}: only administrators may submit for another user "
                f"(you are {submitter!r}, {role})",
                "ask the user to submit it, or an administrator",
            )

    def _exists(self, os_user: str) -> bool:
        """identity.exists, a found account kept FOUND_FOR seconds (a missing one is
        asked again each time, so a new account works at once; a deleted one fails
        its jobs at launch, with the reason)."""
        now = time.monotonic()
        if self._found.get(os_user, 0.0) > now:
            return True
        if not identity.exists(os_user):
            return False
        if len(self._found) > 10_000:
            self._found.clear()
        self._found[os_user] = now + FOUND_FOR
        return True


FOUND_FOR = 60.0


def _single_user_refusal(user: str, server: str) -> ApiError:
    return forbidden(
        f"this tide server runs in single-user mode as OS user {server!r} and runs only "
        f"{server!r}'s jobs, not {user!r}'s",
        f"run tide server as root so jobs run as their users, or (one trust domain only) "
        f"start it with --any-user to run every user's jobs as {server!r}",
    )

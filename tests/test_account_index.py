"""AccountTree's association lookups (by user and account, by user) stay right
as the tree changes: a user added, a list replaced, an association edited in place."""

from __future__ import annotations

from tide.model.account import AccountTree, UserAssoc


def test_lookups_follow_the_users_list() -> None:
    tree = AccountTree(users=[UserAssoc("ann", "phys"), UserAssoc("bob", "bio")])
    assert tree.default_account("ann") == "phys"
    assert [u.account for u in tree.user_assocs_of("ann")] == ["phys"]
    assert tree.default_account("cat") is None and tree.user_assocs_of("cat") == []
    tree.users.append(UserAssoc("ann", "chem", default_account=True))  # a new association
    assert tree.default_account("ann") == "chem"
    assert [u.account for u in tree.user_assocs_of("ann")] == ["phys", "chem"]
    assert tree.assoc("ann", "chem") is tree.users[2]
    tree.users[2] = UserAssoc("cat", "chem")  # edited in place, same length: edited() says so
    tree.edited()
    assert tree.default_account("ann") == "phys" and tree.assoc("ann", "chem") is None
    assert tree.default_account("cat") == "chem"
    tree.users = [UserAssoc("dan", "bio")]  # a new list
    assert tree.user_assocs_of("ann") == [] and tree.default_account("dan") == "bio"


def test_the_first_association_is_the_default_unless_one_is_marked() -> None:
    users = [UserAssoc("ann", "a"), UserAssoc("bob", "x"), UserAssoc("ann", "b")]
    assert AccountTree(users=users).default_account("ann") == "a"
    users[2].default_account = True  # a flag read live, not from the index
    assert AccountTree(users=users).default_account("ann") == "b"

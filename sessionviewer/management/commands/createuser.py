import secrets

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

ROLES = {"viewer": "viewers", "editor": "editors"}
# Permissions an admin may add to a role's: each model permission of the app a role lacks.
GRANTABLE = ("share_session", "reveal_secret", "dismiss_secret")


class Command(BaseCommand):
    help = "Add a user with a role (viewer reads; editor also edits and runs /new and /forget)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=sorted(ROLES), required=True)
        parser.add_argument(
            "--password",
            help="default: a generated one, printed once; a given one must pass the password rules",
        )
        parser.add_argument(
            "--grant",
            action="append",
            default=[],
            choices=GRANTABLE,
            help="a permission beyond the role's (repeat for more): share_session makes share links, "
            "reveal_secret shows a masked secret, dismiss_secret marks one not a secret",
        )

    def handle(self, *args, username, role, password, grant, **options):
        users = get_user_model()
        granted = list(Permission.objects.filter(content_type__app_label="sessionviewer", codename__in=grant))
        if missing := set(grant) - {p.codename for p in granted}:
            raise CommandError(f"no such permission yet: {', '.join(sorted(missing))}")
        if users.objects.filter(username=username).exists():
            raise CommandError(f"a user named {username!r} exists already")
        generated = password is None
        if generated:
            password = secrets.token_urlsafe(12)
        else:  # the same rules as the admin's forms: length, not common, not like the name
            try:
                password_validation.validate_password(password, users(username=username))
            except ValidationError as error:
                raise CommandError(f"the password is refused: {' '.join(error.messages)}") from None
        user = users.objects.create_user(username=username, password=password)
        user.groups.add(Group.objects.get(name=ROLES[role]))
        user.user_permissions.add(*granted)
        message = f"Created {role} {username!r}" + "".join(f", {name}" for name in grant)
        if generated:
            message += f" with password: {password} (shown only this once)"
        self.stdout.write(self.style.SUCCESS(message))

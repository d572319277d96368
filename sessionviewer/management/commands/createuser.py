import secrets

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

ROLES = {"viewer": "viewers", "editor": "editors"}
# Permissions given one by one, beyond the role's (an admin has them all).
GRANTS = ("reveal_secret", "dismiss_secret")


class Command(BaseCommand):
    help = "Add a user with a role (viewer reads; editor also edits and runs /new and /forget)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=sorted(ROLES), required=True)
        parser.add_argument(
            "--grant",
            action="append",
            choices=GRANTS,
            default=[],
            help="a permission beyond the role's; repeat for several",
        )
        parser.add_argument(
            "--password",
            help="default: a generated one, printed once; a given one must pass the password rules",
        )

    def handle(self, *args, username, role, grant, password, **options):
        users = get_user_model()
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
        user.user_permissions.add(
            *Permission.objects.filter(content_type__app_label="sessionviewer", codename__in=grant)
        )
        message = f"Created {role} {username!r}" + "".join(f", {name}" for name in grant)
        if generated:
            message += f" with password: {password} (shown only this once)"
        self.stdout.write(self.style.SUCCESS(message))

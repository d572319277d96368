import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

ROLES = {"viewer": "viewers", "editor": "editors"}


class Command(BaseCommand):
    help = "Add a user with a role (viewer reads; editor also edits and runs /new and /forget)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=sorted(ROLES), required=True)
        parser.add_argument("--password", help="default: a generated one, printed once")

    def handle(self, *args, username, role, password, **options):
        users = get_user_model()
        if users.objects.filter(username=username).exists():
            raise CommandError(f"a user named {username!r} exists already")
        generated = password is None
        password = password or secrets.token_urlsafe(12)
        user = users.objects.create_user(username=username, password=password)
        user.groups.add(Group.objects.get(name=ROLES[role]))
        message = f"Created {role} {username!r}"
        if generated:
            message += f" with password: {password} (shown only this once)"
        self.stdout.write(self.style.SUCCESS(message))

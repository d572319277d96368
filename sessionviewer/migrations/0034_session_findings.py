"""Possible secrets in indexed sessions (issue 31): each finding's place, kind, mask and
fingerprint, never its value; the fingerprints marked "not a secret"; and the permissions to
reveal and to dismiss one, which admins (superusers) hold and `createuser --grant` gives."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessionviewer", "0033_shared_sessions"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="SecretDismissal",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("fingerprint", models.CharField(max_length=64, unique=True)),
                ("kind", models.CharField(max_length=32)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="SessionFinding",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("line", models.PositiveIntegerField()),
                ("entry_id", models.CharField(max_length=256)),
                ("block", models.PositiveIntegerField()),
                ("kind", models.CharField(max_length=32)),
                ("masked", models.TextField()),
                ("fingerprint", models.CharField(max_length=64)),
                (
                    "session",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="findings",
                        to="sessionviewer.session",
                    ),
                ),
            ],
            options={
                "permissions": [
                    ("reveal_secret", "Can reveal a possible secret's value on a transcript"),
                    ("dismiss_secret", "Can mark a possible secret as not a secret, and undo it"),
                ],
                "indexes": [
                    models.Index(fields=["session", "line"], name="finding_session_line"),
                    models.Index(fields=["fingerprint"], name="finding_fingerprint"),
                ],
            },
        ),
    ]

"""A record of what SECRET_KEY makes of a fixed text: finding fingerprints are keyed with it."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessionviewer', '0020_source_machine'),
    ]

    operations = [
        migrations.CreateModel(
            name='KeyCheck',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('purpose', models.CharField(max_length=64, unique=True)),
                ('digest', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
    ]

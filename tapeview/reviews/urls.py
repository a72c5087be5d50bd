"""URLs of the reviews app: the review list, and each entry's review history."""

from django.urls import path

from . import views

app_name = "reviews"

urlpatterns = [
    path("reviews/", views.review_list, name="review_list"),
    path("tapes/<str:key>/entries/<int:pos>/reviews", views.review_history, name="review_history"),
    path("tapes/<str:key>/entries/<int:pos>/reviews/new", views.review_create, name="review_create"),
]

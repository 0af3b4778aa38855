from rest_framework.views import APIView


class PreferenceReadApi(APIView):
    pass


class PreferenceRememberApi(APIView):
    pass


class PreferenceRetireApi(APIView):
    pass


class PreferenceHistoryApi(APIView):
    pass
